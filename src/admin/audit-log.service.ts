import { Injectable } from '@nestjs/common';
import { TransactionContext } from '../database/transaction-context';
import { AuditAction, AuditLogEntity } from './audit-log.entity';

export interface AuditEntryView {
  id: string;
  action: AuditAction;
  keyId: string | null;
  source: string | null;
  remoteAddress: string;
  createdAt: string;
}

@Injectable()
export class AuditLogService {
  constructor(private readonly tx: TransactionContext) {}

  /** Written in the current transaction, so an entry exists exactly when its change does. */
  async record(entry: { action: AuditAction; keyId: string; source: string; remoteAddress: string }): Promise<void> {
    await this.tx.manager.insert(AuditLogEntity, entry);
  }

  async recent(limit: number): Promise<AuditEntryView[]> {
    const rows = await this.tx.manager.find(AuditLogEntity, { order: { id: 'DESC' }, take: limit });
    return rows.map((row) => ({
      id: row.id,
      action: row.action,
      keyId: row.keyId,
      source: row.source,
      remoteAddress: row.remoteAddress,
      createdAt: row.createdAt.toISOString(),
    }));
  }
}

import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '../database/database';
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
  constructor(private readonly db: Database) {}

  /** Written in the change's own transaction, so an entry exists exactly when its change does. */
  async record(tx: Transaction, entry: { action: AuditAction; keyId: string; source: string; remoteAddress: string }): Promise<void> {
    await tx.manager.insert(AuditLogEntity, entry);
  }

  async recent(limit: number): Promise<AuditEntryView[]> {
    const rows = await this.db.manager.find(AuditLogEntity, { order: { id: 'DESC' }, take: limit });
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

import { Injectable } from '@nestjs/common';
import { Transaction } from '../database/database';
import { AuditAction } from './audit-log.entity';
import { AuditLogRepository } from './audit-log.repository';

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
  constructor(private readonly entries: AuditLogRepository) {}

  /** Written in the change's own transaction, so an entry exists exactly when its change does. */
  async record(tx: Transaction, entry: { action: AuditAction; keyId: string | null; source: string; remoteAddress: string }): Promise<void> {
    await this.entries.insert(tx, entry);
  }

  async recent(limit: number): Promise<AuditEntryView[]> {
    return (await this.entries.recent(limit)).map((row) => ({ ...row, createdAt: row.createdAt.toISOString() }));
  }
}

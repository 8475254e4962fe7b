import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '../database/database';
import { sql } from '../database/sql';
import type { AuditAction } from './audit-log.entity';

export interface AuditRow {
  id: string;
  action: AuditAction;
  keyId: string | null;
  source: string | null;
  remoteAddress: string;
  createdAt: Date;
}

const INSERT = sql('audit-insert', 'INSERT INTO admin_audit_log (action, key_id, source, remote_address) VALUES ($1, $2, $3, $4)');

const RECENT = sql(
  'audit-recent',
  `SELECT id, action, key_id AS "keyId", source, remote_address AS "remoteAddress", created_at AS "createdAt"
     FROM admin_audit_log ORDER BY id DESC LIMIT $1`,
);

/** Every query of the admin audit log. */
@Injectable()
export class AuditLogRepository {
  constructor(private readonly db: Database) {}

  async insert(tx: Transaction, entry: { action: AuditAction; keyId: string | null; source: string | null; remoteAddress: string }): Promise<void> {
    await tx.query(INSERT, [entry.action, entry.keyId, entry.source, entry.remoteAddress]);
  }

  recent(limit: number): Promise<AuditRow[]> {
    return this.db.query<AuditRow>(RECENT, [limit]);
  }
}

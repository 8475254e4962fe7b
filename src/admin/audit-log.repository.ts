import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '../database/database';
import { PurgeBatch, PurgeRange } from '../database/purge-batch';
import { sql } from '../database/sql';
import type { ActorType, AuditAction } from './audit-log.entity';

export interface AuditRow {
  id: string;
  action: AuditAction;
  keyId: string | null;
  source: string | null;
  remoteAddress: string;
  actorType: ActorType;
  actorAdminId: string | null;
  actorEmail: string | null;
  targetType: string | null;
  targetId: string | null;
  createdAt: Date;
}

export interface AuditEntry {
  action: AuditAction;
  actorType: ActorType;
  actorAdminId: string | null;
  actorEmail: string | null;
  targetType: string | null;
  targetId: string | null;
  source: string | null;
  remoteAddress: string;
}

const INSERT = sql(
  'audit-insert',
  `INSERT INTO admin_audit_log (action, key_id, source, remote_address, actor_type, actor_admin_id, actor_email, target_type, target_id)
   VALUES ($1, $9, $2, $3, $4, $5, $8, $6, $7)`,
);

/** Newest first: $1 before this id, $2 only this action, $3 only entries by this admin; $4 rows. */
const PAGE = sql(
  'audit-page',
  `SELECT id, action, key_id AS "keyId", source, remote_address AS "remoteAddress", actor_type AS "actorType",
          actor_admin_id AS "actorAdminId", actor_email AS "actorEmail", target_type AS "targetType", target_id AS "targetId",
          created_at AS "createdAt"
     FROM admin_audit_log
    WHERE ($1::bigint IS NULL OR id < $1) AND ($2::varchar IS NULL OR action = $2) AND ($3::uuid IS NULL OR actor_admin_id = $3)
    ORDER BY id DESC LIMIT $4`,
);

/** Retention: of the $3 entries after id $1, those written before now() - $2 (an ISO 8601 duration). */
const PURGE = sql(
  'audit-purge',
  `WITH head AS (
     SELECT id, created_at < now() - $2::interval AS expired FROM admin_audit_log WHERE id > $1::bigint ORDER BY id LIMIT $3),
   gone AS (DELETE FROM admin_audit_log a USING head WHERE a.id = head.id AND head.expired RETURNING 1)
   SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT max(id) FROM head)::text AS last,
          COALESCE((SELECT count(*) = $3 AND bool_and(expired) FROM head), false) AS more`,
);

/** Every query of the admin audit log. */
@Injectable()
export class AuditLogRepository {
  constructor(private readonly db: Database) {}

  async insert(tx: Transaction, entry: AuditEntry): Promise<void> {
    // key_id predates target_type/target_id and stays filled for an API key's entries.
    const keyId = entry.targetType === 'api_key' ? entry.targetId : null;
    await tx.query(INSERT, [entry.action, entry.source, entry.remoteAddress, entry.actorType, entry.actorAdminId, entry.targetType, entry.targetId, entry.actorEmail, keyId]);
  }

  page(filter: { before?: string; action?: AuditAction; adminId?: string }, limit: number): Promise<AuditRow[]> {
    return this.db.query<AuditRow>(PAGE, [filter.before ?? null, filter.action ?? null, filter.adminId ?? null, limit]);
  }

  async purge(tx: Transaction, range: PurgeRange): Promise<PurgeBatch> {
    const [batch] = await tx.query<PurgeBatch>(PURGE, [range.after, range.olderThan, range.limit]);
    return batch;
  }
}

import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { PurgeBatch, PurgeRange } from '../database/purge-batch.js';
import { AuditAction, AuditLogEntity } from './audit-log.entity.js';

export type NewAuditEntry = Pick<
  AuditLogEntity,
  'action' | 'keyId' | 'source' | 'remoteAddress' | 'actorType' | 'actorAdminId' | 'actorEmail' | 'targetType' | 'targetId' | 'changes'
>;

/** Retention: of the $3 entries after id $1, those written before now() - $2 (an ISO 8601 duration). */
const PURGE = `WITH head AS (
     SELECT id, created_at < now() - $2::interval AS expired FROM admin_audit_log WHERE id > $1::bigint ORDER BY id LIMIT $3),
   gone AS (DELETE FROM admin_audit_log a USING head WHERE a.id = head.id AND head.expired RETURNING 1)
   SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT max(id) FROM head)::text AS last,
          COALESCE((SELECT count(*) = $3 AND bool_and(expired) FROM head), false) AS more`;

/** Every query of the admin audit log. */
@Injectable()
export class AuditLogRepository {
  constructor(@InjectRepository(AuditLogEntity) private readonly entries: Repository<AuditLogEntity>) {}

  /** In the change's own transaction `tx`. */
  async insert(tx: EntityManager, entry: NewAuditEntry): Promise<void> {
    await tx.getRepository(AuditLogEntity).insert(entry);
  }

  /** Newest first: before this id, only this action, only entries by this admin. */
  page(filter: { before?: string; action?: AuditAction; adminId?: string }, limit: number): Promise<AuditLogEntity[]> {
    const query = this.entries.createQueryBuilder('a');
    if (filter.before) query.andWhere('a.id < :before', { before: filter.before });
    if (filter.action) query.andWhere('a.action = :action', { action: filter.action });
    if (filter.adminId) query.andWhere('a.actorAdminId = :adminId', { adminId: filter.adminId });
    return query.orderBy('a.id', 'DESC').limit(limit).getMany();
  }

  async purge(tx: EntityManager, range: PurgeRange): Promise<PurgeBatch> {
    const [batch] = await tx.query<PurgeBatch[]>(PURGE, [range.after, range.olderThan, range.limit]);
    return batch;
  }
}

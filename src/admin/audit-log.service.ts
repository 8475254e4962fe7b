import { Injectable } from '@nestjs/common';
import { decodeCursor, encodeCursor, pageOf } from '../common/cursor.js';
import { EntityManager } from 'typeorm';
import { PurgeBatch, PurgeRange } from '../database/purge-batch.js';
import { Actor, AuditContext } from './admin-actor.js';
import { ActorType, AuditAction, AuditChanges, AuditLogEntity } from './audit-log.entity.js';
import { AuditLogRepository } from './audit-log.repository.js';

export interface AuditEntryView {
  id: string;
  action: AuditAction;
  actor: { type: ActorType; adminId: string | null; email: string | null };
  targetType: string | null;
  targetId: string | null;
  /** The API key an api_key.* entry concerns (targetId says the same). */
  keyId: string | null;
  source: string | null;
  remoteAddress: string;
  /** What the change changed, field by field; null where the action says it all. */
  changes: AuditChanges | null;
  createdAt: string;
}

/** The CLI acts on the database directly: its entries name it, with "cli" as the address. */
export const CLI_CONTEXT: AuditContext = { actor: { type: 'cli', adminId: null, email: null }, remoteAddress: 'cli' };

@Injectable()
export class AuditLogService {
  constructor(private readonly entries: AuditLogRepository) {}

  /** Written in the change's own transaction, so an entry exists exactly when its change does. */
  async record(
    tx: EntityManager,
    context: AuditContext,
    entry: { action: AuditAction; target?: { type: string; id: string }; source?: string | null; actor?: Actor; changes?: AuditChanges },
  ): Promise<void> {
    const actor = entry.actor ?? context.actor;
    const target = entry.target ?? null;
    await this.entries.insert(tx, {
      action: entry.action,
      // key_id predates target_type/target_id and stays filled for an API key's entries.
      keyId: target?.type === 'api_key' ? target.id : null,
      actorType: actor.type,
      actorAdminId: actor.adminId,
      actorEmail: actor.email,
      targetType: target?.type ?? null,
      targetId: target?.id ?? null,
      source: entry.source ?? null,
      remoteAddress: context.remoteAddress,
      changes: entry.changes ?? null,
    });
  }

  /** Retention: a batch of entries past RETENTION_AUDIT. */
  purge(tx: EntityManager, range: PurgeRange): Promise<PurgeBatch> {
    return this.entries.purge(tx, range);
  }

  /** Newest first; `cursor` the nextCursor of the page before. */
  async page(
    filter: { cursor?: string; action?: AuditAction; adminId?: string },
    limit: number,
  ): Promise<{ data: AuditEntryView[]; nextCursor: string | null }> {
    const before = filter.cursor ? decodeCursor('a', filter.cursor, 'cursor') : undefined;
    const rows = await this.entries.page({ before, action: filter.action, adminId: filter.adminId }, limit + 1);
    const page = pageOf(rows, limit, (last) => encodeCursor('a', last.id));
    return { data: page.rows.map(view), nextCursor: page.nextCursor };
  }
}

function view(row: AuditLogEntity): AuditEntryView {
  return {
    id: row.id,
    action: row.action,
    actor: { type: row.actorType, adminId: row.actorAdminId, email: row.actorEmail },
    targetType: row.targetType,
    targetId: row.targetId,
    keyId: row.keyId,
    source: row.source,
    remoteAddress: row.remoteAddress,
    changes: row.changes,
    createdAt: row.createdAt.toISOString(),
  };
}

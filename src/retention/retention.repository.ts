import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';

/**
 * First key of the purge's advisory locks: two-key locks are apart from one-key ones (the idempotency
 * claim, migrations), and this namespace from the others (7_340_216 endpoints, 7_340_217 providerReference).
 */
export const RETENTION_LOCK_NAMESPACE = 7_340_219;

/**
 * The locks of tables $1 (in a fixed order), all or, when another instance's purge holds one, not all:
 * taking never waits, and whatever was taken is released with the transaction.
 */
const TRY_LOCKS = `SELECT bool_and(pg_try_advisory_xact_lock(${RETENTION_LOCK_NAMESPACE}, hashtext(name))) AS locked FROM unnest($1::text[]) AS name`;

/**
 * Rows deleted per table as this session's statistics count them, cascades included. Since PostgreSQL 15
 * the "xact" view also holds counts of earlier transactions of the session not yet reported, so only the
 * difference between two readings in one transaction says what happened in between.
 */
const DELETED = `SELECT relname AS "table", n_tup_del::int AS deleted FROM pg_stat_xact_user_tables WHERE n_tup_del > 0`;

/**
 * What the purge needs beyond each module's own statement: its locks, and the count of what went. It owns
 * no table: advisory locks and PostgreSQL's statistics views, SQL by hand in the purge's transaction.
 */
@Injectable()
export class RetentionRepository {
  async tryLock(tx: EntityManager, tables: readonly string[]): Promise<boolean> {
    const [{ locked }] = await tx.query<Array<{ locked: boolean }>>(TRY_LOCKS, [[...tables].sort()]);
    return locked;
  }

  /** Runs `work` in `tx` and counts the rows it deleted, per table (cascades included). */
  async counting<T>(tx: EntityManager, work: () => Promise<T>): Promise<{ result: T; deleted: Map<string, number> }> {
    const before = await this.deletedSoFar(tx);
    const result = await work();
    const deleted = new Map<string, number>();
    for (const [table, rows] of await this.deletedSoFar(tx)) {
      if (rows > (before.get(table) ?? 0)) deleted.set(table, rows - (before.get(table) ?? 0));
    }
    return { result, deleted };
  }

  private async deletedSoFar(tx: EntityManager): Promise<Map<string, number>> {
    return new Map((await tx.query<Array<{ table: string; deleted: number }>>(DELETED)).map((row) => [row.table, row.deleted]));
  }
}

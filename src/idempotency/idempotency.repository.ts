import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, QueryRunner, Repository } from 'typeorm';
import { columnsOf, placeholders } from '../database/entity-sql.js';
import { PreparedStatement, runAndCommit } from '../database/prepared-statement.js';
import { IdempotencyRecordEntity } from './idempotency-record.entity.js';

/** What a request stores as its answer; the database gives the times. */
const STORED = ['idempotencyKey', 'source', 'fingerprint', 'responseStatus', 'responseBody', 'responseLocation'] as const satisfies readonly (keyof IdempotencyRecordEntity)[];

export type NewRecord = Pick<IdempotencyRecordEntity, (typeof STORED)[number]>;

/** A key's stored answer, with the fingerprint of the request that made it. */
export type StoredAnswer = Pick<IdempotencyRecordEntity, 'fingerprint' | 'responseStatus' | 'responseBody' | 'responseLocation'>;

/**
 * What the key says as a request arrives, in the request's transaction (idempotency_begin, migration
 * IdempotencyBegin): its live stored answer, or whether this transaction now holds the key's claim, a
 * transaction-scoped advisory lock taken without waiting (so a duplicate that arrives meanwhile learns at
 * once that the key is in use, and a process that dies mid-request frees it with its transaction). One
 * statement; a function because the answer must be read again behind the lock, with a snapshot of its own.
 */
const BEGIN = new PreparedStatement<StoredAnswer & { held: boolean }>(
  'idempotency-begin',
  `SELECT held, fingerprint, response_status AS "responseStatus", response_body AS "responseBody", response_location AS "responseLocation"
     FROM idempotency_begin($1, $2)`,
);

/** What a claim found: whether this transaction holds the key, and the key's live record if there is one. */
export interface ClaimFinding {
  held: boolean;
  record: StoredAnswer | null;
}

/** Every query of the idempotency_records table. */
@Injectable()
export class IdempotencyRepository {
  /**
   * Writes the answer. Only the holder of the key's lock writes its record, and behind the lock
   * idempotency_begin found no live one: a record already there has expired, and is taken over.
   */
  private readonly store: PreparedStatement;

  constructor(@InjectRepository(IdempotencyRecordEntity) private readonly records: Repository<IdempotencyRecordEntity>) {
    const { metadata } = records;
    this.store = new PreparedStatement(
      'idempotency-store',
      `INSERT INTO idempotency_records (${columnsOf<IdempotencyRecordEntity>(metadata, STORED)}, expires_at)
       VALUES (${placeholders(STORED.length)}, now() + make_interval(secs => $${STORED.length + 1}))
       ON CONFLICT (idempotency_key, source) DO UPDATE
         SET fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status, response_body = EXCLUDED.response_body,
             response_location = EXCLUDED.response_location, created_at = now(), expires_at = EXCLUDED.expires_at`,
    );
  }

  /** What the key says, in `tx` (see BEGIN). */
  async claim(tx: EntityManager, source: string, key: string): Promise<ClaimFinding> {
    const [{ held, ...record }] = await BEGIN.run(tx, [source, key]);
    return { held, record: record.fingerprint === null ? null : record };
  }

  /**
   * Stores the answer as the last statement of `transaction`, which holds the key's lock, for `ttlSeconds`,
   * and commits: both sent together.
   */
  async storeAndCommit(transaction: QueryRunner, record: NewRecord, ttlSeconds: number): Promise<void> {
    await runAndCommit(transaction, [this.store.with(...STORED.map((property) => record[property]), ttlSeconds)]);
  }

  /** Deletes up to `limit` expired records; SKIP LOCKED lets several instances purge side by side. */
  async purgeExpired(limit: number): Promise<number> {
    const [{ deleted }] = await this.records.query<Array<{ deleted: number }>>(
      `WITH gone AS (
         DELETE FROM idempotency_records WHERE ctid IN (
           SELECT ctid FROM idempotency_records WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING 1)
       SELECT count(*)::int AS deleted FROM gone`,
      [limit],
    );
    return deleted;
  }
}

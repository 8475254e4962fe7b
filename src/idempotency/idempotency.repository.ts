import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { columnsOf, placeholders, selectColumns } from '../database/entity-sql.js';
import { Bound, PreparedStatement } from '../database/prepared-statement.js';
import { Lock } from '../database/transaction.js';
import { IdempotencyRecordEntity } from './idempotency-record.entity.js';

/** What a request stores as its answer; the database gives the times. */
const STORED = [
  'idempotencyKey',
  'source',
  'fingerprint',
  'responseStatus',
  'responseBody',
  'responseLocation',
] as const satisfies readonly (keyof IdempotencyRecordEntity)[];

export type NewRecord = Pick<IdempotencyRecordEntity, (typeof STORED)[number]>;

/** A key's stored answer, with the fingerprint of the request that made it. */
export type StoredAnswer = Pick<IdempotencyRecordEntity, 'fingerprint' | 'responseStatus' | 'responseBody' | 'responseLocation'>;

/** A key's record as a request finds it on arrival: live, or expired (then the key counts as new, and its record is taken over). */
export type FoundRecord = StoredAnswer & { live: boolean };

const ANSWER = ['fingerprint', 'responseStatus', 'responseBody', 'responseLocation'] as const satisfies readonly (keyof StoredAnswer)[];

/**
 * The key's claim: a transaction-scoped advisory lock taken without waiting, so a duplicate that arrives
 * meanwhile learns at once that the key is in use, and a process that dies mid-request frees it with its
 * transaction. $1 source, $2 key; the same 64-bit key the releases before took (their idempotency_lock_key),
 * so that during a rolling upgrade old and new instances exclude each other.
 */
const CLAIM = new Lock('idempotency-claim', `pg_try_advisory_xact_lock(hashtextextended($1::varchar || ' ' || $2::varchar, 7340218))`);

/** Every query of the idempotency_records table. */
@Injectable()
export class IdempotencyRepository {
  /** The key's record, live or not: $1 key, $2 source. */
  private readonly record: PreparedStatement<FoundRecord>;
  /**
   * Writes the answer, by the holder of the key's claim. Where the key had no record on arrival, a plain
   * INSERT: a request with the key that committed its answer since (before this one's claim) makes it fail
   * with a unique violation, and nothing of this one commits.
   */
  private readonly store: PreparedStatement;
  /** Takes over an expired record, which the claim's holder read again behind the claim. */
  private readonly takeOver: PreparedStatement;

  constructor(@InjectRepository(IdempotencyRecordEntity) private readonly records: Repository<IdempotencyRecordEntity>) {
    const { metadata } = records;
    this.record = new PreparedStatement(
      'idempotency-record',
      `SELECT ${selectColumns(metadata, { only: ANSWER })}, expires_at > now() AS live FROM idempotency_records WHERE idempotency_key = $1 AND source = $2`,
    );
    const insert = `INSERT INTO idempotency_records (${columnsOf<IdempotencyRecordEntity>(metadata, STORED)}, expires_at)
       VALUES (${placeholders(STORED.length)}, now() + make_interval(secs => $${STORED.length + 1}))`;
    this.store = new PreparedStatement('idempotency-store', insert);
    this.takeOver = new PreparedStatement(
      'idempotency-take-over',
      `${insert}
       ON CONFLICT (idempotency_key, source) DO UPDATE
         SET fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status, response_body = EXCLUDED.response_body,
             response_location = EXCLUDED.response_location, created_at = now(), expires_at = EXCLUDED.expires_at`,
    );
  }

  /** The key's record, live or expired, read alone (no transaction, no lock): what a request finds as it arrives. */
  async find(source: string, key: string): Promise<FoundRecord | null> {
    const [record] = await this.record.run(this.records.manager, [key, source]);
    return record ?? null;
  }

  /** The claim of the key, taken before the transaction reads (see CLAIM). */
  claim(source: string, key: string) {
    return CLAIM.with(source, key);
  }

  /** The key's record, live or expired, read behind the claim, with a snapshot taken once the claim is granted. */
  recordBehindClaim(source: string, key: string): Bound<FoundRecord> {
    return this.record.with(key, source);
  }

  /**
   * The answer stored for `ttlSeconds`, by the holder of the key's claim: the last write of its transaction.
   * `takeOver`: the key's expired record is replaced (see takeOver).
   */
  stored(record: NewRecord, ttlSeconds: number, takeOver: boolean): Bound {
    return (takeOver ? this.takeOver : this.store).with(...STORED.map((property) => record[property]), ttlSeconds);
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

import { Injectable } from '@nestjs/common';
import { Database, Queryable, Transaction } from '../database/database';
import { sql } from '../database/sql';

/** A finished request's answer, stored with the fingerprint of the request that produced it. */
export interface StoredAnswer {
  fingerprint: string;
  status: number;
  body: string;
  location: string | null;
}

/** An answer as it is sent and stored: the status, the JSON text, the Location header. */
export type Answer = Omit<StoredAnswer, 'fingerprint'>;

/**
 * The values of idempotency_claim(), in the order of its parameters (migration IdempotencyClaimFunction):
 * source, key, fingerprint, lifetime in seconds, status, body, location, and the marker the transaction's
 * time replaces in the body (null: none). A statement that claims a key itself passes them as they are.
 */
export type ClaimArguments = readonly [string, string, string, number, number, string, string | null, string | null];

const FIND = sql(
  'idempotency-find',
  `SELECT fingerprint, response_status AS status, response_body AS body, response_location AS location
     FROM idempotency_records WHERE idempotency_key = $2 AND source = $1 AND expires_at > now()`,
);

const CLAIM = sql('idempotency-claim', 'SELECT idempotency_claim($1, $2, $3, $4, $5, $6, $7, $8) AS answer');

/** Whether a transaction holds the key's claim: a request with it is still running. Takes nothing. */
const IN_USE = sql('idempotency-in-use', 'SELECT NOT pg_try_advisory_xact_lock(idempotency_lock_key($1, $2)) AS "inUse"');

const STORE = sql(
  'idempotency-store',
  `UPDATE idempotency_records SET response_status = $3, response_body = $4, response_location = $5
    WHERE idempotency_key = $2 AND source = $1`,
);

const PURGE_EXPIRED = sql(
  'idempotency-purge',
  `WITH gone AS (
     DELETE FROM idempotency_records WHERE ctid IN (
       SELECT ctid FROM idempotency_records WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING 1)
   SELECT count(*)::int AS deleted FROM gone`,
);

/** Every query of the idempotency_records table. */
@Injectable()
export class IdempotencyRepository {
  constructor(private readonly db: Database) {}

  async find(db: Queryable, source: string, key: string): Promise<StoredAnswer | null> {
    const [answer] = await db.query<StoredAnswer>(FIND, [source, key]);
    return answer ?? null;
  }

  /** Claims the key in `tx` with `args`' answer (a placeholder when it is not known yet); the stored answer, or null when not claimed. */
  async claim(tx: Transaction, args: ClaimArguments): Promise<string | null> {
    const [{ answer }] = await tx.query<{ answer: string | null }>(CLAIM, args);
    return answer;
  }

  async inUse(source: string, key: string): Promise<boolean> {
    const [{ inUse }] = await this.db.query<{ inUse: boolean }>(IN_USE, [source, key]);
    return inUse;
  }

  async store(tx: Transaction, source: string, key: string, answer: Answer): Promise<void> {
    await tx.query(STORE, [source, key, answer.status, answer.body, answer.location]);
  }

  /** Deletes up to `limit` expired records; SKIP LOCKED lets several instances purge side by side. */
  async purgeExpired(limit: number): Promise<number> {
    const [{ deleted }] = await this.db.query<{ deleted: number }>(PURGE_EXPIRED, [limit]);
    return deleted;
  }
}

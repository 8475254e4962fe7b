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
 * The values of idempotency_claim_or_find() (migration IdempotencyClaimOrFind), which takes
 * idempotency_claim()'s parameters, in their order (migration IdempotencyClaimFunction):
 * source, key, fingerprint, lifetime in seconds, status, body, location, and the marker the transaction's
 * time replaces in the body (null: none). A statement that claims a key itself passes them as they are.
 */
export type ClaimArguments = readonly [string, string, string, number, number, string, string | null, string | null];

const FIND = sql(
  'idempotency-find',
  `SELECT fingerprint, response_status AS status, response_body AS body, response_location AS location
     FROM idempotency_records WHERE idempotency_key = $2 AND source = $1 AND expires_at > now()`,
);

const CLAIM = sql(
  'idempotency-claim',
  `SELECT claimed, answer, stored_fingerprint AS "storedFingerprint", stored_status AS "storedStatus", stored_location AS "storedLocation"
     FROM idempotency_claim_or_find($1, $2, $3, $4, $5, $6, $7, $8)`,
);

/** A row of idempotency_claim_or_find(), as a statement that calls it returns its columns. */
export interface ClaimRow {
  claimed: boolean;
  answer: string | null;
  storedFingerprint: string | null;
  storedStatus: number | null;
  storedLocation: string | null;
}

/**
 * What a claim did: claimed, with the answer as stored; or not, with the key's live stored answer (a
 * replay, or the key used for another request), or none while a request holding the key is still running.
 */
export type ClaimOutcome = { claimed: true; answer: string } | { claimed: false; stored: StoredAnswer | null };

/** A ClaimRow as what it says. */
export function claimOutcome(row: ClaimRow): ClaimOutcome {
  if (row.claimed) return { claimed: true, answer: row.answer! };
  if (row.storedFingerprint === null) return { claimed: false, stored: null };
  return { claimed: false, stored: { fingerprint: row.storedFingerprint, status: row.storedStatus!, body: row.answer!, location: row.storedLocation } };
}

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

  /** Claims the key in `tx` with `args`' answer (a placeholder when it is not known yet), or says why not. */
  async claim(tx: Transaction, args: ClaimArguments): Promise<ClaimOutcome> {
    const [row] = await tx.query<ClaimRow>(CLAIM, args);
    return claimOutcome(row);
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

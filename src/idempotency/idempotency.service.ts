import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { EntityManager } from 'typeorm';
import { Interval } from '@nestjs/schedule';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-codes';
import { toProblem } from '../common/problem';
import { AppConfig } from '../config/app-config';
import { TransactionContext } from '../database/transaction-context';
import { IdempotencyRecordEntity } from './idempotency-record.entity';
import { IdempotentReplay } from './idempotent-replay';

export const IDEMPOTENCY_KEY_LENGTH = { min: 8, max: 128 } as const;
export const IDEMPOTENCY_KEY_PATTERN = new RegExp(`^[a-zA-Z0-9._:-]{${IDEMPOTENCY_KEY_LENGTH.min},${IDEMPOTENCY_KEY_LENGTH.max}}$`);
/** Business refusals are part of the operation's answer and are replayed; all else leaves the key free. */
const STORED_REFUSALS: ReadonlySet<ErrorCode> = new Set(['DUPLICATE_DOCUMENT', 'INVALID_STATE_TRANSITION', 'NOT_FOUND']);

export interface IdempotentCall {
  source: string;
  key: string;
  fingerprint: string;
  /** For a stored refusal's problem body, exactly as the filter renders it. */
  instance: string;
  requestId: string;
  /** The status Nest will send for a successful return value. */
  successStatus: number;
  /** Runs the operation; the transaction is open and every repository joins it. */
  operation: () => Promise<unknown>;
  /** Read after the operation, so a Location it set is stored with the response. */
  location: () => string | null;
}

/** 64 bits of SHA-256: two different keys practically never share a claim (32-bit hashtext could). */
function claimLockKey(source: string, key: string): string {
  return createHash('sha256').update(`idempotency\n${source}\n${key}`).digest().readBigInt64BE(0).toString();
}

type Outcome = { kind: 'in_use' } | { kind: 'reused' } | { kind: 'replay'; record: IdempotencyRecordEntity } | { kind: 'done'; value: unknown } | { kind: 'refused'; error: AppError };

@Injectable()
export class IdempotencyService {
  constructor(
    private readonly tx: TransactionContext,
    private readonly config: AppConfig,
  ) {}

  /** The header, or a 422 that names it. Checked before anything else is looked at. */
  static parseKey(header: unknown): string {
    if (header === undefined || header === '') {
      throw AppError.validation([{ field: 'X-Idempotency-Key', message: 'is required' }], 'X-Idempotency-Key header is required');
    }
    if (typeof header !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(header)) {
      throw AppError.validation(
        [{ field: 'X-Idempotency-Key', message: 'must be 8-128 characters of letters, digits, . _ : -' }],
        'X-Idempotency-Key header is malformed',
      );
    }
    return header;
  }

  /**
   * One transaction holds the claim, the operation's writes and the stored response, so they
   * commit together or not at all. The claim is a transaction-scoped advisory lock: a duplicate
   * that arrives meanwhile is told to retry (409) instead of waiting, and if this process dies the
   * database rolls everything back and frees the key at once, with no lease to expire.
   */
  async execute(call: IdempotentCall): Promise<unknown> {
    // A finished request needs no claim: concurrent retries of it all get the replay, never a 409.
    const finished = await this.findRecord(this.tx.manager, call);
    const outcome: Outcome = finished ?? (await this.tx.run<Outcome>(async (manager) => {
      const [{ claimed }] = await manager.query('SELECT pg_try_advisory_xact_lock($1::bigint) AS claimed', [claimLockKey(call.source, call.key)]);
      if (!claimed) return { kind: 'in_use' };
      // Looked up again under the claim: the first request may have committed since.
      const existing = await this.findRecord(manager, call);
      if (existing) return existing;

      let outcome: Outcome;
      let status: number;
      let body: unknown;
      try {
        body = await call.operation();
        status = call.successStatus;
        outcome = { kind: 'done', value: body };
      } catch (error) {
        if (!(error instanceof AppError) || !STORED_REFUSALS.has(error.code)) throw error;
        ({ body, status } = { body: toProblem(error, call.instance, call.requestId).body, status: error.status });
        outcome = { kind: 'refused', error };
      }
      // An expired record of the same key is replaced: after its lifetime the key counts as new.
      await manager.query(
        `INSERT INTO idempotency_records (source, idempotency_key, fingerprint, response_status, response_body, response_location, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))
         ON CONFLICT (source, idempotency_key) DO UPDATE SET
           fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status, response_body = EXCLUDED.response_body,
           response_location = EXCLUDED.response_location, created_at = now(), expires_at = EXCLUDED.expires_at`,
        [call.source, call.key, call.fingerprint, status, JSON.stringify(body), call.location(), this.config.IDEMPOTENCY_TTL_SECONDS],
      );
      return outcome;
    }));

    switch (outcome.kind) {
      case 'in_use':
        throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A request with this idempotency key is still being processed; retry shortly', undefined, {
          'Retry-After': '1',
        });
      case 'reused':
        throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was already used for a different request');
      case 'replay':
        throw new IdempotentReplay(outcome.record.responseStatus, outcome.record.responseBody, outcome.record.responseLocation);
      case 'refused':
        throw outcome.error;
      case 'done':
        return outcome.value;
    }
  }

  /** The live record of this key as an outcome (replay or reused), or null when there is none. */
  private async findRecord(manager: EntityManager, call: IdempotentCall): Promise<Outcome | null> {
    const record = await manager
      .createQueryBuilder(IdempotencyRecordEntity, 'r')
      .where('r.source = :source AND r.idempotency_key = :key AND r.expires_at > now()', { source: call.source, key: call.key })
      .getOne();
    if (!record) return null;
    return record.fingerprint === call.fingerprint ? { kind: 'replay', record } : { kind: 'reused' };
  }

  /** Expired records, in batches; SKIP LOCKED lets several instances purge side by side. */
  @Interval('idempotency-purge', 60_000)
  async purgeExpired(batchSize = 5000): Promise<number> {
    let total = 0;
    for (;;) {
      const result = await this.tx.manager.query(
        `DELETE FROM idempotency_records WHERE ctid IN (
           SELECT ctid FROM idempotency_records WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)`,
        [batchSize],
      );
      const deleted = Number(result[1] ?? 0);
      total += deleted;
      if (deleted < batchSize) return total;
    }
  }
}

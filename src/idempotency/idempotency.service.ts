import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { AppError } from '../common/app-error.js';
import { describeFailure } from '../common/database-failure.js';
import { ErrorCode } from '../common/error-codes.js';
import { toProblem } from '../common/problem.js';
import { AppConfig } from '../config/app-config.js';
import { Transaction, Transactions } from '../database/transaction.js';
import { urlRedactorFor } from '../logging/redact-url.js';
import { FoundRecord, IdempotencyRepository, StoredAnswer } from './idempotency.repository.js';

export const IDEMPOTENCY_PURGE_JOB = 'idempotency-purge';

export const IDEMPOTENCY_KEY_LENGTH = { min: 8, max: 128 } as const;
export const IDEMPOTENCY_KEY_PATTERN = new RegExp(`^[a-zA-Z0-9._:-]{${IDEMPOTENCY_KEY_LENGTH.min},${IDEMPOTENCY_KEY_LENGTH.max}}$`);

/** Business refusals are part of the operation's answer and are replayed; all else leaves the key free. */
export const STORED_REFUSALS: ReadonlySet<ErrorCode> = new Set(['DUPLICATE_DOCUMENT', 'INVALID_STATE_TRANSITION', 'NOT_FOUND']);

const PURGE_BATCH = 5000;

/** The request as idempotency sees it. */
export interface IdempotentCall {
  source: string;
  key: string;
  /** SHA-256 of method, path and the canonical JSON of the body (fingerprint.ts). */
  fingerprint: string;
  /** For a stored refusal's problem body, exactly as the error filter renders one. */
  instance: string;
  requestId: string;
}

/** An answer as it is sent and stored: the status, the JSON text, the Location header. */
export interface Answer {
  status: number;
  body: string;
  location: string | null;
}

/**
 * What the key says as a request arrives: an earlier request's answer (a replay), or that the key is new to
 * this request; `expired`: it has an expired record, which the request takes over.
 */
export type Looked = { kind: 'replay'; answer: Answer } | { kind: 'new'; expired: boolean };

/**
 * The key holds an earlier request's answer after all: found behind the claim, once the request's work
 * had begun (a request with the same key finished in between). Thrown from the work's first read, so
 * that the work ends there; the interceptor answers with the replay.
 */
export class AnsweredBefore extends Error {
  constructor(readonly answer: Answer) {
    super('The idempotency key was answered before');
    this.name = 'AnsweredBefore';
  }
}

/**
 * The idempotency rules (README, "Idempotency rules"): a POST happens at most once per
 * (source, key); its writes and its stored answer commit together or not at all. The claim is a
 * transaction-scoped advisory lock: a duplicate that arrives meanwhile is told to retry (409) instead of
 * waiting, and if this process dies the database rolls everything back and frees the key at once.
 */
@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);
  /** A stored refusal names the path as its `instance`, as the error filter does: with any key in it redacted. */
  private readonly redactUrl: (url: string) => string;

  constructor(
    private readonly transactions: Transactions,
    private readonly records: IdempotencyRepository,
    private readonly config: AppConfig,
  ) {
    this.redactUrl = urlRedactorFor(config);
  }

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
   * What the key says as the request arrives, before its body is looked at: the answer of an earlier
   * request with it (a replay), a 422 when that answer is another request's, or that the key is new. Read
   * alone, without the claim: a replay writes nothing and opens no transaction.
   */
  async look(call: IdempotentCall): Promise<Looked> {
    const record = await this.records.find(call.source, call.key);
    if (record?.live) return { kind: 'replay', answer: this.replayOf(call, record) };
    return { kind: 'new', expired: record !== null };
  }

  /**
   * The request's transaction: its first read claims the key (409 while another request holds it). A key
   * found new on arrival needs no second look: a request with it that commits its answer before this one
   * claims makes this one's store fail (IdempotencyRepository's store), and the request is looked at anew.
   * An expired record is read again behind the claim, since the request takes it over: AnsweredBefore when
   * another took it over first. `attempt` is 2 when the request runs again after a unique violation.
   */
  open(call: IdempotentCall, looked: Extract<Looked, { kind: 'new' }>, attempt = 1): Transaction {
    return this.transactions.begin(
      {
        locks: [this.records.claim(call.source, call.key)],
        reads: looked.expired ? [this.records.recordBehindClaim(call.source, call.key)] : [],
        check: ([held], [rows]) => {
          const record = rows?.[0] as FoundRecord | undefined;
          if (record?.live) throw new AnsweredBefore(this.replayOf(call, record));
          if (held !== true) {
            throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A request with this idempotency key is still being processed; retry shortly', undefined, {
              'Retry-After': '1',
            });
          }
        },
      },
      attempt,
    );
  }

  /** The answer of a request the route refused: a business refusal is stored and sent like any answer; null for any other failure. */
  refusalAnswer(error: unknown, call: IdempotentCall): Answer | null {
    if (!(error instanceof AppError) || !STORED_REFUSALS.has(error.code)) return null;
    return { status: error.status, body: JSON.stringify(toProblem(error, this.redactUrl(call.instance), call.requestId).body), location: null };
  }

  /**
   * Stores `answer` and commits it with the route's writes, in one round trip; the transaction ends either
   * way. A unique violation: the key was answered by another request since this one looked (see `open`).
   */
  finish(tx: Transaction, call: IdempotentCall, looked: Extract<Looked, { kind: 'new' }>, answer: Answer): Promise<void> {
    const record = {
      idempotencyKey: call.key,
      source: call.source,
      fingerprint: call.fingerprint,
      responseStatus: answer.status,
      responseBody: answer.body,
      responseLocation: answer.location,
    };
    return tx.commit([this.records.stored(record, this.config.IDEMPOTENCY_TTL_SECONDS, looked.expired)]);
  }

  /** Rolls the request back: nothing it wrote stays, and the key is free for a corrected retry. */
  abandon(tx: Transaction): Promise<void> {
    return tx.rollback();
  }

  private replayOf(call: IdempotentCall, record: StoredAnswer): Answer {
    if (record.fingerprint !== call.fingerprint) throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was already used for a different request');
    return { status: record.responseStatus, body: record.responseBody, location: record.responseLocation };
  }

  /** Expired records, in batches. */
  @Interval(IDEMPOTENCY_PURGE_JOB, 60_000)
  async purgeExpired(batchSize = PURGE_BATCH): Promise<number> {
    let total = 0;
    try {
      for (;;) {
        const deleted = await this.records.purgeExpired(batchSize);
        total += deleted;
        if (deleted < batchSize) return total;
      }
    } catch (error) {
      this.logger.warn({ ...describeFailure(error), purged: total }, 'Purging expired idempotency records failed; will retry');
      return total;
    }
  }
}

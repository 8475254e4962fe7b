import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { AppError } from '../common/app-error.js';
import { describeFailure } from '../common/database-failure.js';
import { ErrorCode } from '../common/error-codes.js';
import { toProblem } from '../common/problem.js';
import { AppConfig } from '../config/app-config.js';
import { urlRedactorFor } from '../logging/redact-url.js';
import { ClaimFinding, IdempotencyRepository } from './idempotency.repository.js';

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

/** A key this request holds: its transaction, which the route's writes join, until `finish` or `abandon`. */
export class Claim {
  constructor(readonly runner: QueryRunner) {}

  get manager(): EntityManager {
    return this.runner.manager;
  }
}

/** What `begin` found: the key is this request's now, or it holds the answer of an earlier one (a replay). */
export type Begun = { kind: 'claimed'; claim: Claim } | { kind: 'replay'; answer: Answer };

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
    @InjectDataSource() private readonly dataSource: DataSource,
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
   * Opens the request's transaction and claims the key in it; or answers from the key's live record (a
   * replay), or refuses: 409 while another request holds the key, 422 when its record is another request's.
   */
  async begin(call: IdempotentCall): Promise<Begun> {
    const runner = this.dataSource.createQueryRunner();
    let claimed = false;
    try {
      await runner.startTransaction();
      const { held, record } = await this.records.claim(runner.manager, call.source, call.key);
      if (record) return { kind: 'replay', answer: this.replayOf(call, record) };
      if (!held) {
        throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A request with this idempotency key is still being processed; retry shortly', undefined, { 'Retry-After': '1' });
      }
      claimed = true;
      return { kind: 'claimed', claim: new Claim(runner) };
    } finally {
      // A replay or a refusal wrote nothing: its transaction ends here.
      if (!claimed) await this.end(runner);
    }
  }

  /** The answer of a request the route refused: a business refusal is stored and sent like any answer; null for any other failure. */
  refusalAnswer(error: unknown, call: IdempotentCall): Answer | null {
    if (!(error instanceof AppError) || !STORED_REFUSALS.has(error.code)) return null;
    return { status: error.status, body: JSON.stringify(toProblem(error, this.redactUrl(call.instance), call.requestId).body), location: null };
  }

  /** Stores `answer` and commits it with the route's writes; the transaction ends either way. */
  async finish(claim: Claim, call: IdempotentCall, answer: Answer): Promise<void> {
    try {
      await this.records.storeAndCommit(
        claim.runner,
        { idempotencyKey: call.key, source: call.source, fingerprint: call.fingerprint, responseStatus: answer.status, responseBody: answer.body, responseLocation: answer.location },
        this.config.IDEMPOTENCY_TTL_SECONDS,
      );
    } finally {
      await this.end(claim.runner);
    }
  }

  /** Rolls the request back: nothing it wrote stays, and the key is free for a corrected retry. */
  abandon(claim: Claim): Promise<void> {
    return this.end(claim.runner);
  }

  private replayOf(call: IdempotentCall, record: NonNullable<ClaimFinding['record']>): Answer {
    if (record.fingerprint !== call.fingerprint) throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was already used for a different request');
    return { status: record.responseStatus, body: record.responseBody, location: record.responseLocation };
  }

  /** Rolls back what did not commit (a rollback that fails means the connection is gone, and takes the transaction with it), then releases. */
  private async end(runner: QueryRunner): Promise<void> {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    await runner.release();
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

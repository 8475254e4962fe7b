import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { AppError } from '../common/app-error';
import { describeFailure } from '../common/database-failure';
import { ErrorCode } from '../common/error-codes';
import { toProblem } from '../common/problem';
import { AppConfig } from '../config/app-config';
import { Database, Transaction } from '../database/database';
import { Answer, ClaimArguments, IdempotencyRepository, StoredAnswer } from './idempotency.repository';
import { IdempotentOperation, TRANSACTION_TIME } from './idempotent-operation';

export const IDEMPOTENCY_KEY_LENGTH = { min: 8, max: 128 } as const;
export const IDEMPOTENCY_KEY_PATTERN = new RegExp(`^[a-zA-Z0-9._:-]{${IDEMPOTENCY_KEY_LENGTH.min},${IDEMPOTENCY_KEY_LENGTH.max}}$`);

/** Business refusals are part of the operation's answer and are replayed; all else leaves the key free. */
const STORED_REFUSALS: ReadonlySet<ErrorCode> = new Set(['DUPLICATE_DOCUMENT', 'INVALID_STATE_TRANSITION', 'NOT_FOUND']);

/** The transaction's time marker as it appears in an answer's JSON text. */
const TRANSACTION_TIME_JSON = JSON.stringify(TRANSACTION_TIME);

const PURGE_BATCH = 5000;

export interface IdempotentCall {
  source: string;
  key: string;
  fingerprint: string;
  /** For a stored refusal's problem body, exactly as the error filter renders one. */
  instance: string;
  requestId: string;
  /** The status Nest sends for a successful answer. */
  successStatus: number;
}

/** What the request gets: an answer first made now, or the stored one (`replayed`). */
export interface IdempotentReply extends Answer {
  replayed: boolean;
}

/** What the key says: its stored answer (a replay), used for another request, or still being processed. */
type KeyState = { kind: 'stored'; answer: StoredAnswer } | { kind: 'reused' } | { kind: 'in_use' };

@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);

  constructor(
    private readonly db: Database,
    private readonly records: IdempotencyRepository,
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
   * The answer to the request: a replay, or the operation's own. `prepare` validates the request and says
   * what to do (the route's handler); a request it refuses is refused only once the key is known to be
   * neither in use nor used (CONTRACT §1 order). The claim, the operation's writes and the stored answer
   * commit together or not at all. The claim is a transaction-scoped advisory lock: a duplicate that
   * arrives meanwhile is told to retry (409) instead of waiting, and if this process dies the database
   * rolls everything back and frees the key at once, with no lease to expire.
   */
  async execute(call: IdempotentCall, prepare: () => Promise<IdempotentOperation>): Promise<IdempotentReply> {
    let operation: IdempotentOperation;
    try {
      operation = await prepare();
    } catch (error) {
      const state = await this.keyState(call);
      if (state) return this.replyFor(state);
      throw error;
    }
    if (typeof operation?.run !== 'function') throw new Error('An @Idempotent() handler must return an IdempotentOperation');
    const outcome = (operation.inAdvance ? await this.runInAdvance(call, operation) : null) ?? (await this.runGeneral(call, operation));
    return 'kind' in outcome ? this.replyFor(outcome) : { ...outcome, replayed: false };
  }

  /** The whole request in one statement; null when it must go the general way (nothing was written). */
  private async runInAdvance(call: IdempotentCall, operation: IdempotentOperation): Promise<Answer | KeyState | null> {
    const { answer, claimAndRun } = operation.inAdvance!;
    const inAdvance: Answer = { status: call.successStatus, body: JSON.stringify(answer), location: operation.location ?? null };
    const outcome = await claimAndRun(this.claimArguments(call, inAdvance, TRANSACTION_TIME_JSON));
    switch (outcome.result) {
      case 'done':
        return { ...inAdvance, body: outcome.stored };
      case 'not_claimed':
        return this.stateOf(call, outcome.stored);
      case 'general':
        return null;
    }
  }

  /** Claims the key, runs the operation and stores its answer, in one transaction. */
  private async runGeneral(call: IdempotentCall, operation: IdempotentOperation): Promise<Answer | KeyState> {
    return this.db.transaction<Answer | KeyState>(async (tx) => {
      // A placeholder until the answer is known; no other transaction sees the record before it is stored.
      const claim = await this.records.claim(tx, this.claimArguments(call, { status: 0, body: '', location: null }, null));
      if (!claim.claimed) return this.stateOf(call, claim.stored);
      const done = await this.attempt(tx, call, operation);
      await this.records.store(tx, call.source, call.key, done);
      return done;
    });
  }

  /** The operation's answer: its value, or a refusal of a stored kind as its problem body. Anything else it throws rolls back. */
  private async attempt(tx: Transaction, call: IdempotentCall, operation: IdempotentOperation): Promise<Answer> {
    try {
      return { status: call.successStatus, body: JSON.stringify(await operation.run(tx)), location: operation.location ?? null };
    } catch (error) {
      if (!(error instanceof AppError) || !STORED_REFUSALS.has(error.code)) throw error;
      return { status: error.status, body: JSON.stringify(toProblem(error, call.instance, call.requestId).body), location: null };
    }
  }

  /** What the key says when this request could not claim it; null when it is free. */
  private async keyState(call: IdempotentCall): Promise<KeyState | null> {
    const stored = await this.records.find(this.db, call.source, call.key);
    if (stored) return this.stateOf(call, stored);
    return (await this.records.inUse(call.source, call.key)) ? { kind: 'in_use' } : null;
  }

  /** The key's state from what a claim that did not claim it found: its live answer, or none while it is in use. */
  private stateOf(call: IdempotentCall, stored: StoredAnswer | null): KeyState {
    if (!stored) return { kind: 'in_use' };
    return stored.fingerprint === call.fingerprint ? { kind: 'stored', answer: stored } : { kind: 'reused' };
  }

  private replyFor(state: KeyState): IdempotentReply {
    switch (state.kind) {
      case 'stored':
        return { status: state.answer.status, body: state.answer.body, location: state.answer.location, replayed: true };
      case 'reused':
        throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was already used for a different request');
      case 'in_use':
        throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A request with this idempotency key is still being processed; retry shortly', undefined, {
          'Retry-After': '1',
        });
    }
  }

  private claimArguments(call: IdempotentCall, answer: Answer, timeMarker: string | null): ClaimArguments {
    return [call.source, call.key, call.fingerprint, this.config.IDEMPOTENCY_TTL_SECONDS, answer.status, answer.body, answer.location, timeMarker];
  }

  /** Expired records, in batches. */
  @Interval('idempotency-purge', 60_000)
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

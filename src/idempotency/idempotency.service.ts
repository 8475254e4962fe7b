import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { Interval } from '@nestjs/schedule';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-codes';
import { toProblem } from '../common/problem';
import { AppConfig } from '../config/app-config';
import { AdvisoryLock, Database, Db, statement, Transaction } from '../database/database';
import { AnswerInAdvance, IdempotentOperation, TRANSACTION_TIME } from './idempotent-operation';
import { IdempotentReplay } from './idempotent-replay';
import { StoredAnswer, storedAnswerColumns } from './stored-answer';

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
  /** The key's stored answer when it was already read (with the API key), so no second look-up is needed. */
  storedAnswer: StoredAnswer | null | undefined;
  /** The status Nest sends for a successful answer. */
  successStatus: number;
}

/** An answer as it is sent and stored: the status, the JSON text, the Location header. */
export type Answer = Omit<StoredAnswer, 'fingerprint'>;

/** 64 bits of SHA-256: two different keys practically never share a claim (32-bit hashtext could). */
function claimLockKey(source: string, key: string): string {
  return createHash('sha256').update(`idempotency\n${source}\n${key}`).digest().readBigInt64BE(0).toString();
}

const FIND_RECORD = statement(
  'idempotency-find',
  `SELECT ${storedAnswerColumns('r')} FROM idempotency_records r WHERE r.source = $1 AND r.idempotency_key = $2 AND r.expires_at > now()`,
);

/**
 * True in SQL once this transaction holds a fresh claim (set by CLAIM). A statement sent with the claim,
 * before its answer (AnswerInAdvance), must write nothing unless it holds.
 */
const CLAIM_HELD_SETTING = 'idempotency.claim_held';
export const CLAIM_HELD = isOn(CLAIM_HELD_SETTING);

/** An operation sent with its answer in advance marks, with this SQL expression, that it did the work. */
const ANSWERED_SETTING = 'idempotency.answered';
export const MARK_ANSWERED = `set_config('${ANSWERED_SETTING}', 'on', true)`;
const ANSWERED = isOn(ANSWERED_SETTING);

/**
 * True or false, never null: a setting no transaction of the connection has set yet reads as NULL, and
 * `NOT (NULL = 'on')` is NULL, which a WHERE takes as false.
 */
function isOn(setting: string): string {
  return `(current_setting('${setting}', true) IS NOT DISTINCT FROM 'on')`;
}

/**
 * The claim, in one statement: the transaction-scoped advisory lock (so a duplicate in flight gets
 * 409 at once instead of waiting) and, once it is held, the key's record and the operation's own lock
 * ($6, $7; waited for). The record's ON CONFLICT sees records committed after this statement's snapshot
 * was taken, so a request that finished just before the lock was free can never run twice; an expired
 * record is taken over. A fresh claim sets CLAIM_HELD. The record holds the answer ($8 status, $9 body
 * with the transaction's time where $11 stands, $10 location) when it is known in advance, a placeholder
 * (status 0) otherwise; either way no other transaction sees it before the answer is in it.
 */
const CLAIM = statement(
  'idempotency-claim',
  `WITH claim AS (SELECT pg_try_advisory_xact_lock($1::bigint) AS claimed),
        record AS (
          INSERT INTO idempotency_records (source, idempotency_key, fingerprint, response_status, response_body, response_location, expires_at)
          SELECT $2, $3, $4, $8, replace($9, $11, '"' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"'), $10,
                 now() + make_interval(secs => $5)
            FROM claim WHERE claimed
          ON CONFLICT (source, idempotency_key) DO UPDATE SET
            fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status, response_body = EXCLUDED.response_body,
            response_location = EXCLUDED.response_location, created_at = now(), expires_at = EXCLUDED.expires_at
          WHERE idempotency_records.expires_at <= now()
          RETURNING response_body),
        held AS (SELECT set_config('${CLAIM_HELD_SETTING}', 'on', true) FROM record),
        also AS (SELECT pg_advisory_xact_lock($6::int, hashtext($7)) FROM claim WHERE claimed AND $7::text IS NOT NULL)
   SELECT claimed, EXISTS (SELECT 1 FROM held) AS fresh, (SELECT response_body FROM record) AS body,
          (SELECT count(*) FROM also) AS also
     FROM claim`,
);

const STORE_ANSWER = statement(
  'idempotency-store',
  `UPDATE idempotency_records SET response_status = $3, response_body = $4, response_location = $5
    WHERE source = $1 AND idempotency_key = $2`,
);

/**
 * Ends an answer in advance, sent last with the COMMIT: the claim stored the answer; if the operation
 * did not mark the work done, the record is withdrawn under the fresh claim, so nothing of the request
 * commits. Says whether the answer stands.
 */
const SETTLE_IN_ADVANCE = statement(
  'idempotency-settle-in-advance',
  `WITH withdrawn AS (
     DELETE FROM idempotency_records WHERE source = $1 AND idempotency_key = $2 AND ${CLAIM_HELD} AND NOT ${ANSWERED})
   SELECT ${CLAIM_HELD} AND ${ANSWERED} AS answered`,
);

const PURGE_EXPIRED = statement(
  'idempotency-purge',
  `WITH gone AS (
     DELETE FROM idempotency_records WHERE ctid IN (
       SELECT ctid FROM idempotency_records WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING 1)
   SELECT count(*)::int AS deleted FROM gone`,
);

type Outcome = { kind: 'in_use' } | { kind: 'reused' } | { kind: 'replay'; answer: StoredAnswer } | { kind: 'done'; answer: Answer } | { kind: 'refused'; error: AppError };
type Performed = { outcome: Outcome; answer: Answer } | { error: unknown };
/** What the claim statement answers: `body` is the record's answer (with its time) when the claim is fresh. */
type Claim = { claimed: boolean; fresh: boolean; body: string | null };
/** A placeholder's answer, until the operation's is stored. */
const NO_ANSWER: Answer = { status: 0, body: '', location: null };

/** Thrown out of the transaction of a request that did not get a fresh claim, so that nothing of it commits. */
class NotClaimed extends Error {
  constructor(readonly outcome: Outcome) {
    super('The idempotency key was not claimed');
  }
}

/** Thrown out of a transaction that claimed a key only to learn its state, so that the claim rolls back. */
class ClaimProbed extends Error {
  constructor(readonly outcome: Outcome | null) {
    super('The idempotency key was only probed');
  }
}

const TRANSACTION_TIME_JSON = JSON.stringify(TRANSACTION_TIME);

@Injectable()
export class IdempotencyService {
  constructor(
    private readonly db: Database,
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
   * The answer to the request: a replay, a refusal, or the operation's own. `prepare` validates the
   * request and says what to do (the route's handler); it runs after the replay check, as the contract
   * orders. One transaction holds the claim, the operation's writes and the stored answer, so they
   * commit together or not at all. The claim is a transaction-scoped advisory lock: a duplicate that
   * arrives meanwhile is told to retry (409) instead of waiting, and if this process dies the database
   * rolls everything back and frees the key at once, with no lease to expire.
   */
  async execute(call: IdempotentCall, prepare: () => Promise<IdempotentOperation>): Promise<Answer> {
    // A finished request needs no claim: concurrent retries of it all get the replay, never a 409.
    const finished = call.storedAnswer === undefined ? await this.findRecord(this.db, call) : IdempotencyService.outcomeOf(call, call.storedAnswer);
    const outcome: Outcome = finished ?? (await this.perform(call, prepare));

    switch (outcome.kind) {
      case 'in_use':
        throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A request with this idempotency key is still being processed; retry shortly', undefined, {
          'Retry-After': '1',
        });
      case 'reused':
        throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was already used for a different request');
      case 'replay':
        throw new IdempotentReplay(outcome.answer.status, outcome.answer.body, outcome.answer.location);
      case 'refused':
        throw outcome.error;
      case 'done':
        return outcome.answer;
    }
  }

  /**
   * Prepares the operation and runs it under the claim: in one round trip when its answer is known in
   * advance and it can be done that way, else the general way. A request refused while being prepared
   * (its body, say) is refused only once the key is known to be neither in use nor used (CONTRACT §1).
   */
  private async perform(call: IdempotentCall, prepare: () => Promise<IdempotentOperation>): Promise<Outcome> {
    let operation: IdempotentOperation;
    try {
      operation = await prepare();
    } catch (error) {
      const taken = await this.keyState(call);
      if (taken) return taken;
      throw error;
    }
    if (typeof operation?.run !== 'function') throw new Error('An @Idempotent() handler must return an IdempotentOperation');
    if (operation.inAdvance) {
      const outcome = await this.runInAdvance(call, operation, operation.inAdvance);
      if (outcome) return outcome;
    }
    return this.db.run((tx) => this.claimAndRun(tx, call, operation)).catch(IdempotencyService.notClaimed);
  }

  /**
   * The claim, the operation's statements and the answer in advance, sent together with the COMMIT.
   * Null when the claim was fresh but the operation did not do the work: nothing was written (the
   * record was withdrawn), and it must run the general way.
   */
  private async runInAdvance(call: IdempotentCall, operation: IdempotentOperation, inAdvance: AnswerInAdvance<unknown>): Promise<Outcome | null> {
    const answer = { status: call.successStatus, body: JSON.stringify(inAdvance.answer), location: operation.location ?? null };
    const [claim, settled] = await this.db.run(async (tx) => {
      const [claim, , [settled]] = await Promise.all([
        this.claim(tx, call, operation.lock, answer),
        inAdvance.send(tx),
        tx.queryAndCommit<{ answered: boolean }>(SETTLE_IN_ADVANCE, [call.source, call.key]),
      ]);
      return [claim, settled] as const;
    });
    if (settled.answered) return { kind: 'done', answer: { ...answer, body: claim.body! } };
    return this.outcomeOfClaim(this.db, call, claim);
  }

  /** Claims the key, then runs the operation. Without a fresh claim nothing commits: NotClaimed rolls the transaction back. */
  private async claimAndRun(tx: Transaction, call: IdempotentCall, operation: IdempotentOperation): Promise<Outcome> {
    const taken = await this.outcomeOfClaim(tx, call, await this.claim(tx, call, operation.lock));
    if (taken) throw new NotClaimed(taken);
    const performed = await this.attempt(tx, call, operation);
    if ('error' in performed) throw performed.error;
    const { status, body, location } = performed.answer;
    await tx.queryAndCommit(STORE_ANSWER, [call.source, call.key, status, body, location]);
    return performed.outcome;
  }

  /** What the key says, learnt by claiming it and rolling back: in use, replay or reused; null when it is free. */
  private async keyState(call: IdempotentCall): Promise<Outcome | null> {
    try {
      return await this.db.run(async (tx) => {
        throw new ClaimProbed(await this.outcomeOfClaim(tx, call, await this.claim(tx, call)));
      });
    } catch (error) {
      if (error instanceof ClaimProbed) return error.outcome;
      throw error;
    }
  }

  /** Sends the claim statement; `lock`, the operation's own, is taken with it, and `answer` stored if known in advance. */
  private claim(tx: Transaction, call: IdempotentCall, lock?: AdvisoryLock, answer: Answer = NO_ANSWER): Promise<Claim> {
    const claim = tx.query<Claim>(CLAIM, [
      claimLockKey(call.source, call.key),
      call.source,
      call.key,
      call.fingerprint,
      this.config.IDEMPOTENCY_TTL_SECONDS,
      lock?.namespace ?? 0,
      lock?.key ?? null,
      answer.status,
      answer.body,
      answer.location,
      TRANSACTION_TIME_JSON,
    ]);
    // The claim takes the lock when it wins; when it loses, the operation writes nothing (or does not
    // run at all), so for the operation the lock is as good as held either way.
    if (lock) tx.holds(lock);
    return claim.then(([row]) => row);
  }

  /** Null for a fresh claim; otherwise what the key says: in use, or the record a request committed since the look-up. */
  private async outcomeOfClaim(db: Db, call: IdempotentCall, { claimed, fresh }: Claim): Promise<Outcome | null> {
    if (!claimed) return { kind: 'in_use' };
    if (!fresh) return (await this.findRecord(db, call)) ?? { kind: 'in_use' };
    return null;
  }

  /** The operation's answer: its value, or a refusal stored and replayed like one; anything else it throws is kept as `error`. */
  private async attempt(tx: Transaction, call: IdempotentCall, operation: IdempotentOperation): Promise<Performed> {
    try {
      const answer = { status: call.successStatus, body: JSON.stringify(await operation.run(tx)), location: operation.location ?? null };
      return { outcome: { kind: 'done', answer }, answer };
    } catch (error) {
      if (!(error instanceof AppError) || !STORED_REFUSALS.has(error.code)) return { error };
      const answer = { status: error.status, body: JSON.stringify(toProblem(error, call.instance, call.requestId).body), location: null };
      return { outcome: { kind: 'refused', error }, answer };
    }
  }

  /** The live record of this key as an outcome (replay or reused), or null when there is none. */
  private async findRecord(db: Db, call: IdempotentCall): Promise<Outcome | null> {
    const [answer] = await db.query<StoredAnswer>(FIND_RECORD, [call.source, call.key]);
    return IdempotencyService.outcomeOf(call, answer ?? null);
  }

  private static notClaimed(this: void, error: unknown): Outcome {
    if (error instanceof NotClaimed) return error.outcome;
    throw error;
  }

  private static outcomeOf(call: IdempotentCall, answer: StoredAnswer | null): Outcome | null {
    if (!answer) return null;
    return answer.fingerprint === call.fingerprint ? { kind: 'replay', answer } : { kind: 'reused' };
  }

  /** Expired records, in batches; SKIP LOCKED lets several instances purge side by side. */
  @Interval('idempotency-purge', 60_000)
  async purgeExpired(batchSize = 5000): Promise<number> {
    let total = 0;
    for (;;) {
      const [{ deleted }] = await this.db.query<{ deleted: number }>(PURGE_EXPIRED, [batchSize]);
      total += deleted;
      if (deleted < batchSize) return total;
    }
  }
}

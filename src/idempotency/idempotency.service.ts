import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { Interval } from '@nestjs/schedule';
import { AppError } from '../common/app-error';
import { ErrorCode } from '../common/error-codes';
import { toProblem } from '../common/problem';
import { AppConfig } from '../config/app-config';
import { AdvisoryLock, Database, Db, statement, Transaction } from '../database/database';
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
  /** The status Nest will send for a successful return value. */
  successStatus: number;
  /** A lock the operation will need, taken with the claim to save it a round trip (IdempotentOptions.lock). */
  alsoLock: AdvisoryLock | null;
  /**
   * The operation's first statement does nothing unless CLAIM_HELD: it is then sent with the claim, in
   * its round trip, instead of after the claim's answer (Transaction.behind).
   */
  behindClaim: boolean;
  /** Runs the operation in the open transaction, which it must pass to every write it makes. */
  operation: (tx: Transaction) => Promise<unknown>;
  /** Read after the operation, so a Location it set is stored with the response. */
  location: () => string | null;
}

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
 * before its answer (IdempotentCall.behindClaim), must write nothing unless it holds.
 */
const CLAIM_HELD_SETTING = 'idempotency.claim_held';
export const CLAIM_HELD = `current_setting('${CLAIM_HELD_SETTING}', true) = 'on'`;

/**
 * The claim, in one statement: the transaction-scoped advisory lock (so a duplicate in flight gets
 * 409 at once instead of waiting) and, once it is held, a placeholder record and the operation's
 * own lock ($6, $7; waited for). The placeholder's ON CONFLICT sees records committed after this
 * statement's snapshot was taken, so a request that finished just before the lock was free can
 * never run twice; an expired record is taken over. A fresh claim sets CLAIM_HELD.
 */
const CLAIM = statement(
  'idempotency-claim',
  `WITH claim AS (SELECT pg_try_advisory_xact_lock($1::bigint) AS claimed),
        placeholder AS (
          INSERT INTO idempotency_records (source, idempotency_key, fingerprint, response_status, response_body, expires_at)
          SELECT $2, $3, $4, 0, '', now() + make_interval(secs => $5) FROM claim WHERE claimed
          ON CONFLICT (source, idempotency_key) DO UPDATE SET
            fingerprint = EXCLUDED.fingerprint, response_status = 0, response_body = '', response_location = NULL,
            created_at = now(), expires_at = EXCLUDED.expires_at
          WHERE idempotency_records.expires_at <= now()
          RETURNING 1),
        held AS (SELECT set_config('${CLAIM_HELD_SETTING}', 'on', true) FROM placeholder),
        also AS (SELECT pg_advisory_xact_lock($6::int, hashtext($7)) FROM claim WHERE claimed AND $7::text IS NOT NULL)
   SELECT claimed, EXISTS (SELECT 1 FROM held) AS fresh, (SELECT count(*) FROM also) AS also FROM claim`,
);

const STORE_ANSWER = statement(
  'idempotency-store',
  `UPDATE idempotency_records SET response_status = $3, response_body = $4, response_location = $5
    WHERE source = $1 AND idempotency_key = $2`,
);

const PURGE_EXPIRED = statement(
  'idempotency-purge',
  `WITH gone AS (
     DELETE FROM idempotency_records WHERE ctid IN (
       SELECT ctid FROM idempotency_records WHERE expires_at <= now() LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING 1)
   SELECT count(*)::int AS deleted FROM gone`,
);

type Outcome = { kind: 'in_use' } | { kind: 'reused' } | { kind: 'replay'; answer: StoredAnswer } | { kind: 'done'; value: unknown } | { kind: 'refused'; error: AppError };
type Performed = { outcome: Outcome; status: number; body: unknown } | { error: unknown };

/** Thrown out of the transaction of a request that did not get the claim, so that nothing of it commits. */
class NotClaimed extends Error {
  constructor(readonly outcome: Outcome) {
    super('The idempotency key was not claimed');
  }
}

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
   * One transaction holds the claim, the operation's writes and the stored response, so they
   * commit together or not at all. The claim is a transaction-scoped advisory lock: a duplicate
   * that arrives meanwhile is told to retry (409) instead of waiting, and if this process dies the
   * database rolls everything back and frees the key at once, with no lease to expire.
   */
  async execute(call: IdempotentCall): Promise<unknown> {
    // A finished request needs no claim: concurrent retries of it all get the replay, never a 409.
    const finished = call.storedAnswer === undefined ? await this.findRecord(this.db, call) : IdempotencyService.outcomeOf(call, call.storedAnswer);
    const outcome: Outcome = finished ?? (await this.db.run((tx) => this.claimAndRun(tx, call)).catch(IdempotencyService.notClaimed));

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
        return outcome.value;
    }
  }

  /**
   * Claims the key and runs the operation: after the claim's answer, or behind it in the same round
   * trip (call.behindClaim). Without the claim nothing commits: NotClaimed rolls the transaction back.
   */
  private async claimAndRun(tx: Transaction, call: IdempotentCall): Promise<Outcome> {
    const claim = tx
      .query<{ claimed: boolean; fresh: boolean }>(CLAIM, [
        claimLockKey(call.source, call.key),
        call.source,
        call.key,
        call.fingerprint,
        this.config.IDEMPOTENCY_TTL_SECONDS,
        call.alsoLock?.namespace ?? 0,
        call.alsoLock?.key ?? null,
      ])
      .then(([row]) => row);
    // The claim takes the lock when it wins; when it loses, the operation runs no statement (or none at
    // all), so for the operation the lock is as good as held either way.
    if (call.alsoLock) tx.holds(call.alsoLock);
    const early = call.behindClaim ? this.perform(tx, call, claim.then(({ fresh }) => fresh)) : undefined;
    const [{ claimed, fresh }, performed] = await Promise.all([claim, early]);
    if (!claimed) throw new NotClaimed({ kind: 'in_use' });
    // Claimed, but a live record is there: the first request committed since the look-up.
    if (!fresh) throw new NotClaimed((await this.findRecord(tx, call)) ?? { kind: 'in_use' });

    const answer = performed ?? (await this.perform(tx, call));
    if ('error' in answer) throw answer.error;
    await tx.queryAndCommit(STORE_ANSWER, [call.source, call.key, answer.status, JSON.stringify(answer.body), call.location()]);
    return answer.outcome;
  }

  /**
   * The operation's answer: its value, or a refusal stored and replayed like one; anything else it
   * throws is kept as `error`. `behind`: the claim's answer, when the operation is sent behind it.
   */
  private async perform(tx: Transaction, call: IdempotentCall, behind?: Promise<boolean>): Promise<Performed> {
    try {
      const value = behind ? await tx.behind(behind, () => call.operation(tx)) : await call.operation(tx);
      return { outcome: { kind: 'done', value }, status: call.successStatus, body: value };
    } catch (error) {
      if (!(error instanceof AppError) || !STORED_REFUSALS.has(error.code)) return { error };
      return { outcome: { kind: 'refused', error }, status: error.status, body: toProblem(error, call.instance, call.requestId).body };
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

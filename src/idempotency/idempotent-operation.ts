import type { Transaction } from '../database/database';
import type { ClaimArguments, StoredAnswer } from './idempotency.repository';

/**
 * What an `@Idempotent()` route's handler returns: the work its request asks for, which the interceptor
 * runs once the idempotency key is claimed, in the transaction that also stores the answer. The handler
 * itself runs before the claim (after validation) and must not touch the database.
 */
export interface IdempotentOperation<T = unknown> {
  /**
   * Does the work in the claim's transaction; its value is the answer, stored and sent. A refusal it
   * throws as an AppError of a stored kind (CONTRACT §2.2) is stored and sent the same way.
   */
  run(tx: Transaction): Promise<T>;
  /** The answer's Location header. */
  location?: string;
  /** The same work for when its answer is known before it is done: then the whole request is one statement. */
  inAdvance?: AnswerInAdvance<T>;
}

/**
 * An operation whose answer is known before the database replies. `claimAndRun` does the work in one
 * statement that also claims the key, by calling idempotency_claim_or_find() with `claim` as its arguments:
 * the claim writes the key's record with the answer in it, and the work is done only if the claim was made.
 * Its outcome is `done` with the answer as stored, `not_claimed` (nothing written) with the key's live
 * stored answer or none while the key is in use, or `general` when the work cannot be done that way
 * (nothing written): then it runs the general way, `run`.
 */
export interface AnswerInAdvance<T> {
  /** The answer, with TRANSACTION_TIME wherever the transaction's time belongs. */
  answer: T;
  claimAndRun(claim: ClaimArguments): Promise<InAdvanceOutcome>;
}

export type InAdvanceOutcome = { result: 'done'; stored: string } | { result: 'not_claimed'; stored: StoredAnswer | null } | { result: 'general' };

/**
 * Stands, in an answer in advance, for the transaction's time (PostgreSQL's now(), as every default of
 * the transaction's rows has it): the stored answer gets it as ISO 8601 in UTC with milliseconds, as
 * `Date#toISOString` writes it. A NUL character, which no request's text can hold, so it is unambiguous.
 */
export const TRANSACTION_TIME = '\u0000transaction-time';

/** An operation that is only its work, for a route whose answer depends on what the database holds. */
export function operation<T>(run: (tx: Transaction) => Promise<T>): IdempotentOperation<T> {
  return { run };
}

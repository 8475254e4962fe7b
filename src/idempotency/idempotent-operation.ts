import type { AdvisoryLock, Transaction } from '../database/database';

/**
 * What an `@Idempotent()` route's handler returns: the work its request asks for, which the
 * interceptor runs once the idempotency key is claimed, in the transaction that also stores the
 * answer. The handler itself runs before the claim (after validation) and must not touch the database.
 */
export interface IdempotentOperation<T = unknown> {
  /** Does the work in the claim's transaction, every write through `tx`; its value is the answer, stored and sent. */
  run(tx: Transaction): Promise<T>;
  /** A lock `run` takes first (with `tx.advisoryLock`): the claim's statement takes it instead, saving a round trip. */
  lock?: AdvisoryLock;
  /** The answer's Location header. */
  location?: string;
  /** The same work for when its answer is known before it is done: then all of it is one round trip. */
  inAdvance?: AnswerInAdvance<T>;
}

/**
 * An operation whose answer is known before the database replies: the claim, the operation's
 * statements, the stored answer and the COMMIT leave together, in one round trip. Its statements must
 * write nothing unless the claim is held (CLAIM_HELD), and the one that does the work marks it done
 * (MARK_ANSWERED). When none does (the work cannot be done this way, say a duplicate whose refusal must
 * be worked out), nothing is written and the operation runs the general way, `run`.
 */
export interface AnswerInAdvance<T> {
  /** The answer, with TRANSACTION_TIME wherever the transaction's time belongs. */
  answer: T;
  /** Sends the statements: all of them before its first `await`, so they leave with the claim. */
  send(tx: Transaction): Promise<unknown>;
}

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

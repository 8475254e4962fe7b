import type { CallOptions } from './transport';

/** Options of a POST: the gateway performs it at most once per idempotency key. */
export interface IdempotentCallOptions extends CallOptions {
  /**
   * One per logical operation (`[a-zA-Z0-9._:-]{8,128}`). By default the client makes one per call and
   * sends it on every retry of that call. To stay exactly-once across a restart of your own process,
   * derive it from your own record (`invoice-${externalId}`) or store it before calling.
   */
  idempotencyKey?: string;
}

/** A fresh idempotency key: random, so it never collides with another operation's. */
export function newIdempotencyKey(): string {
  return `tdg-${crypto.randomUUID()}`;
}

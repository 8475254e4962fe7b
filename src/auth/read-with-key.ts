import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { authenticateWith } from './api-keys.service';

/**
 * One read that a route's request needs, made by ApiKeyGuard in the same statement as the API key
 * look-up: one round trip where there would be two (a replay's stored answer, a document read by id).
 * It is made whether the request then passes the rate limit or not, so it must have no side effect.
 */
export interface ReadWithKey {
  /** Names the combined statement: `api-key-authenticate+<name>`. */
  readonly name: string;
  /**
   * A SELECT of at most one row over `$2`, and `k.source` (the key's source) if it needs it. Its columns
   * come back beside the key's, which are `key:`-prefixed so that no name clashes. A column name its own
   * table lacks would silently mean the `api_keys` column of that name: name only the table's columns.
   */
  readonly sql: string;
  /** `$2` for this request, or undefined when the read does not apply to it: the key is then looked up alone. */
  parameter(request: FastifyRequest): string | undefined;
  /** Keeps what was read on the request, for the handler or an interceptor: `row`'s read columns are all null if it found nothing. */
  keep(request: FastifyRequest, row: Record<string, unknown>): void;
}

/** Where ApiKeyGuard finds the route's ReadWithKey. */
export const ReadWithKeyOf = Reflector.createDecorator<ReadWithKey>();

/**
 * Declares the route's ReadWithKey (one per route; `@Idempotent()` declares the stored answer's). Its
 * statement is made here, as the class is defined, so that a clash of names fails at start, not per request.
 */
export const ReadsWithKey = (read: ReadWithKey) => {
  authenticateWith(read);
  return ReadWithKeyOf(read);
};

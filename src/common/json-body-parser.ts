import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { FieldError } from './error-codes';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes exactly as received, for routes that verify a signature over them. */
    rawBody?: Buffer;
  }
}

/**
 * Stands in for a body that is not usable JSON. Parsing happens before Nest's guards run, so a
 * parse error raised there would answer 422 before the API key (401) and the idempotency checks;
 * instead the body becomes this marker and the validation pipe refuses it at the contract's place
 * in the order. Its one enumerable field makes its fingerprint that of the raw bytes.
 */
export class MalformedBody {
  readonly $malformed: string;

  constructor(
    raw: Buffer,
    readonly error: FieldError,
  ) {
    this.$malformed = createHash('sha256').update(raw).digest('hex');
    Object.defineProperty(this, 'error', { enumerable: false });
  }
}

/** What every free-text string of a request obeys, as a JSON Schema pattern: no NUL (see findUnstorable). */
export const TEXT_PATTERN = '^[^\\u0000]*$';

/** Keys that class-transformer silently drops (or secure JSON parsing refuses) on the way to a DTO. */
const RESERVED_KEYS = new Set(['constructor', '__proto__', 'prototype']);

/**
 * The first place in a parsed value that could not be stored as sent: a NUL character (PostgreSQL
 * text cannot hold one) or a reserved key (it would vanish before validation). Null when there is none.
 */
export function findUnstorable(value: unknown, path = ''): FieldError | null {
  if (typeof value === 'string') return value.includes('\u0000') ? { field: path || 'body', message: 'must not contain NUL characters' } : null;
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, child] of Object.entries(value)) {
    const childPath = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    if (key.includes('\u0000')) return { field: childPath, message: 'must not contain NUL characters' };
    if (!Array.isArray(value) && RESERVED_KEYS.has(key)) return { field: childPath, message: 'is a reserved name and cannot be used as a key' };
    const found = findUnstorable(child, childPath);
    if (found) return found;
  }
  return null;
}

/**
 * The only body parsers: JSON, keeping the raw bytes. On `rawOnlyRoutes` the body is not parsed at
 * all (whatever its content type), so their handlers can verify a signature first: garbage with a
 * bad signature must be a 401, not a parse error.
 */
export function registerJsonBodyParser(fastify: FastifyInstance, rawOnlyRoutes: readonly string[]): void {
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  const rawOnly = (request: FastifyRequest) => Boolean(request.routeOptions.url && rawOnlyRoutes.includes(request.routeOptions.url));
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    request.rawBody = body;
    if (rawOnly(request) || body.length === 0) return done(null, undefined);
    parseJson(request, body as unknown as string, (error: Error | null, value?: unknown) => {
      if (error) return done(null, new MalformedBody(body, { field: 'body', message: 'is not valid JSON' }));
      const unstorable = findUnstorable(value);
      done(null, unstorable ? new MalformedBody(body, unstorable) : value);
    });
  });
  // Other media types are refused with 415 before parsing (http-hooks.ts), except on raw-only routes.
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    request.rawBody = body;
    done(null, undefined);
  });
}

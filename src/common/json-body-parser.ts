import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { FieldError } from './error-codes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes exactly as received, for routes that verify a signature over them. */
    rawBody?: Buffer;
  }
}

/**
 * Stands in for a body that is not usable JSON. Parsing happens before Nest's guards run, so a
 * parse error raised there would answer 422 before the API key (401) and the idempotency checks;
 * instead the body becomes this marker and the validation pipe refuses it at the place the README gives it
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

/**
 * The body size of every JSON route (the bank webhook keeps BODY_LIMIT_BYTES, which stays the ceiling):
 * a document is a few KB, and every byte past that is work a key holder could make us do for nothing.
 */
export const JSON_ROUTE_BODY_LIMIT_BYTES = 64 * 1024;

/**
 * The largest JSON value a route accepts, counted before anything else looks at it: class-transformer
 * and the validator spend time per key, and a body of 100,000 unknown keys would block the event loop
 * for seconds. A document has about 35 members, nested 3 deep.
 */
export const MAX_JSON_MEMBERS = 256;
export const MAX_JSON_DEPTH = 8;

/** The first way `value` exceeds the limits above, or null; stops counting as soon as it does. */
export function exceedsShape(value: unknown): FieldError | null {
  let members = 0;
  const visit = (node: unknown, depth: number): FieldError | null => {
    if (typeof node !== 'object' || node === null) return null;
    if (depth > MAX_JSON_DEPTH) return { field: 'body', message: `must not nest objects or arrays more than ${MAX_JSON_DEPTH} levels deep` };
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      members += 1;
      if (members > MAX_JSON_MEMBERS) return { field: 'body', message: `must not have more than ${MAX_JSON_MEMBERS} members in all` };
      const found = visit(child, depth + 1);
      if (found) return found;
    }
    return null;
  };
  return visit(value, 1);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Keys that class-transformer silently drops (or secure JSON parsing refuses) on the way to a DTO. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['constructor', '__proto__', 'prototype']);

/** A UTF-16 surrogate without its other half (`\ud800` in JSON): with the u flag, a pair matches as one code point. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/** Why a string cannot be stored as sent, or null. */
export function unstorableText(text: string): string | null {
  if (text.includes('\u0000')) return 'must not contain NUL characters';
  // UTF-8 cannot encode it: PostgreSQL text would get U+FFFD instead, and jsonb refuses the escape outright.
  if (LONE_SURROGATE.test(text)) return 'must not contain an unpaired surrogate (\\ud800-\\udfff alone)';
  return null;
}

/**
 * The first place in a parsed value that could not be stored as sent: a NUL character (PostgreSQL
 * text cannot hold one), an unpaired surrogate (UTF-8 cannot encode one) or a reserved key (it would
 * vanish before validation). Null when there is none.
 */
export function findUnstorable(value: unknown, path = ''): FieldError | null {
  if (typeof value === 'string') {
    const message = unstorableText(value);
    return message ? { field: path || 'body', message } : null;
  }
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, child] of Object.entries(value)) {
    const childPath = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    const message = unstorableText(key);
    if (message) return { field: childPath, message };
    if (!Array.isArray(value) && RESERVED_KEYS.has(key)) return { field: childPath, message: 'is a reserved name and cannot be used as a key' };
    const found = findUnstorable(child, childPath);
    if (found) return found;
  }
  return null;
}

/** A member's path as the field errors name it: `taxpayer.country`, `items[2]`. */
const memberPath = (path: string, member: string | number) => (typeof member === 'number' ? `${path}[${member}]` : path ? `${path}.${member}` : member);

/**
 * The first key that appears twice in one object of `text` (valid JSON), with its path; null when none does.
 * JSON.parse keeps the last of them without a word, so a body could mean one thing to a proxy or a log
 * reader and another to the gateway. Keys are compared as parsed (`"a"` and `"\u0061"` are one key).
 */
export function findDuplicateKey(text: string): FieldError | null {
  // One frame per open object or array: its path, and the keys seen (objects) or the index reached (arrays).
  const frames: Array<{ path: string; keys: Set<string> | null; index: number; key: string }> = [];
  let expectingKey = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const frame = frames.at(-1);
      if (expectingKey && frame?.keys) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (frame.keys.has(key)) return { field: memberPath(frame.path, key), message: 'appears more than once in its object' };
        frame.keys.add(key);
        frame.key = key;
        expectingKey = false;
      }
      i = end;
    } else if (c === '{' || c === '[') {
      const parent = frames.at(-1);
      const path = parent ? memberPath(parent.path, parent.keys ? parent.key : parent.index) : '';
      frames.push({ path, keys: c === '{' ? new Set() : null, index: 0, key: '' });
      expectingKey = c === '{';
    } else if (c === '}' || c === ']') {
      frames.pop();
    } else if (c === ',') {
      const frame = frames.at(-1);
      if (frame?.keys) expectingKey = true;
      else if (frame) frame.index += 1;
    }
  }
  return null;
}

/** The parsed body, or why it cannot be used, checked in order of cost: encoding, syntax, size, content. */
function parseBody(body: Buffer, parseJson: (text: string) => unknown): unknown {
  let text: string;
  try {
    text = UTF8.decode(body);
  } catch {
    return new MalformedBody(body, { field: 'body', message: 'is not valid UTF-8' });
  }
  let value: unknown;
  try {
    value = parseJson(text);
  } catch {
    return new MalformedBody(body, { field: 'body', message: 'is not valid JSON' });
  }
  const problem = exceedsShape(value) ?? findDuplicateKey(text) ?? findUnstorable(value);
  return problem ? new MalformedBody(body, problem) : value;
}

/**
 * The only body parsers: JSON, keeping the raw bytes. On `rawOnlyRoutes` the body is not parsed at
 * all (whatever its content type), so their handlers can verify a signature first: garbage with a
 * bad signature must be a 401, not a parse error. Every other route gets a body limit that fits JSON
 * requests; raw-only routes keep `bodyLimit`, the server-wide ceiling.
 */
export function registerJsonBodyParser(fastify: FastifyInstance, rawOnlyRoutes: readonly string[], bodyLimit: number): void {
  const routeLimit = Math.min(JSON_ROUTE_BODY_LIMIT_BYTES, bodyLimit);
  fastify.addHook('onRoute', (route) => {
    if (!rawOnlyRoutes.includes(route.url)) route.bodyLimit = Math.min(route.bodyLimit ?? routeLimit, routeLimit);
  });
  // JSON.parse rather than Fastify's secure parser, which refuses `__proto__` and `constructor` keys as if the
  // text were not JSON: JSON.parse makes them plain own properties (no prototype is set), and findUnstorable
  // then refuses them by their path as the reserved names they are, before anything else reads the value.
  const parseJson = (text: string): unknown => JSON.parse(text);
  const rawOnly = (request: FastifyRequest) => Boolean(request.routeOptions.url && rawOnlyRoutes.includes(request.routeOptions.url));
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    request.rawBody = body;
    if (rawOnly(request) || body.length === 0) return done(null, undefined);
    done(null, parseBody(body, parseJson));
  });
  // Other media types are refused with 415 before parsing (http-hooks.ts), except on raw-only routes.
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    request.rawBody = body;
    done(null, undefined);
  });
}

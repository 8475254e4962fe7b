import type { FastifyInstance } from 'fastify';
import helmet, { HelmetOptions } from 'helmet';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * The headers helmet sets for `options`, worked out once. With static directives they are the same on
 * every response, and @fastify/helmet rebuilt (parsed and validated) the whole policy per request.
 */
function securityHeaders(options: HelmetOptions): Record<string, string> {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: string | number) => {
      headers[name.toLowerCase()] = String(value);
    },
    removeHeader: () => undefined,
  };
  helmet(options)({} as IncomingMessage, response as unknown as ServerResponse, (error?: unknown) => {
    if (error) throw error instanceof Error ? error : new Error('helmet refused its options', { cause: error });
  });
  return headers;
}

/** A JSON answer loads nothing and may be framed by no one. */
const JSON_CSP = "default-src 'none'; frame-ancestors 'none'";

/**
 * What OWASP's REST Security Cheat Sheet asks of API answers (a policy that allows nothing, no framing,
 * nosniff, HSTS), plus no referrer and no cross-origin embedding.
 */
const JSON_ANSWER_HEADERS = ['strict-transport-security', 'x-content-type-options', 'x-frame-options', 'referrer-policy', 'cross-origin-resource-policy'];

const isJson = (contentType: unknown) => typeof contentType === 'string' && /^application\/(?:[\w.+-]*\+)?json\b/i.test(contentType);

interface SecurityHeaderSets {
  /** Every answer's. */
  json: Record<string, string>;
  /** Added to answers a browser renders as a page (anything but JSON): helmet's whole set for `options`. */
  page: Record<string, string>;
}

function securityHeaderSets(options: HelmetOptions): SecurityHeaderSets {
  const page = securityHeaders(options);
  const json: Record<string, string> = { 'content-security-policy': JSON_CSP };
  for (const name of JSON_ANSWER_HEADERS) if (page[name] !== undefined) json[name] = page[name];
  return { json, page };
}

/**
 * Every answer gets the short set for JSON, which is what nearly every answer is; answers of any other
 * type (Swagger UI, the console, /metrics) get helmet's whole set, so a new kind of page is covered
 * without being listed. A route may still set its own policy (the console does).
 */
export function registerSecurityHeaders(fastify: FastifyInstance, options: HelmetOptions): void {
  const { json, page } = securityHeaderSets(options);
  const pageOnly = Object.entries(page).filter(([name]) => name !== 'content-security-policy' && json[name] === undefined);
  fastify.addHook('onRequest', (_request, reply, done) => {
    reply.headers(json);
    done();
  });
  fastify.addHook('onSend', (_request, reply, payload, done) => {
    if (!isJson(reply.getHeader('content-type'))) {
      for (const [name, value] of pageOnly) if (!reply.hasHeader(name)) reply.header(name, value);
      if (reply.getHeader('content-security-policy') === JSON_CSP) reply.header('content-security-policy', page['content-security-policy']);
    }
    done(null, payload);
  });
}

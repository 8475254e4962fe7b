import type { FastifyInstance, RawRequestDefaultExpression } from 'fastify';
import { randomUUID } from 'node:crypto';
import { AppError } from './app-error.js';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Echo a caller's X-Request-Id when it is harmless to log and return; otherwise make one. Harmless means
 * short, plain and not secret-like (`looksSecret`, the rule URL redaction uses): a key, token or signature
 * a client put there by mistake must not reach the log line of every refusal.
 */
export function requestIdsFor(looksSecret: (text: string) => boolean): (request: RawRequestDefaultExpression) => string {
  return (request) => {
    const incoming = request.headers['x-request-id'];
    return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) && !looksSecret(incoming) ? incoming : randomUUID();
  };
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/** The API and the administration: every answer there is for one authenticated caller (or refuses one). */
const isPrivateArea = (url: string) => url.startsWith('/api/') || url === '/admin' || url.startsWith('/admin/') || url.startsWith('/admin?');

type Headers = Record<string, string | string[] | undefined>;

export function hasBody(headers: Headers): boolean {
  const length = headers['content-length'];
  return headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * Why a request body cannot be read as the README's JSON (UTF-8, not compressed), or null. Fastify
 * would parse text/plain and forms too, ignore the charset and never decompress.
 */
export function mediaTypeRefusal(headers: Headers): AppError | null {
  const encoding = headers['content-encoding'];
  if (encoding !== undefined && String(encoding).trim().toLowerCase() !== 'identity') {
    return new AppError('UNSUPPORTED_MEDIA_TYPE', 'A request body must not be compressed (Content-Encoding is not supported)');
  }
  const [type, ...parameters] = String(headers['content-type'] ?? '').split(';');
  if (type.trim().toLowerCase() !== 'application/json') {
    return new AppError('UNSUPPORTED_MEDIA_TYPE', 'A request body must be sent as application/json');
  }
  const charset = parameters.map((p) => p.split('=')).find(([name]) => name.trim().toLowerCase() === 'charset')?.[1];
  if (charset !== undefined && charset.trim().replace(/^"|"$/g, '').toLowerCase() !== 'utf-8') {
    return new AppError('UNSUPPORTED_MEDIA_TYPE', 'A request body must be encoded as UTF-8 (charset=utf-8)');
  }
  return null;
}

/**
 * `anyMediaTypeRoutes` verify a signature over their raw bodies first: they refuse a wrong media type
 * themselves, after the signature, so that an unsigned request of any type stays a 401.
 */
export function registerHttpHooks(fastify: FastifyInstance, anyMediaTypeRoutes: readonly string[]): void {
  // While shutting down, answers to requests that were already in flight close their connection;
  // otherwise a client's keep-alive socket would hold the server open until it times out.
  let draining = false;
  fastify.addHook('preClose', async () => {
    draining = true;
  });
  // Callback hooks rather than async ones: they run on every request, and each async hook costs a promise.
  fastify.addHook('onSend', (request, reply, payload, done) => {
    if (draining) reply.header('Connection', 'close');
    // What the API and the admin endpoints answer is a caller's own (their documents, keys, accounts): no
    // cache on the way may keep it. A route that says otherwise (the console's files) keeps its own.
    if (isPrivateArea(request.url) && !reply.hasHeader('cache-control')) reply.header('Cache-Control', 'no-store');
    done(null, payload);
  });
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    const route = request.routeOptions.url;
    if ((route && anyMediaTypeRoutes.includes(route)) || !METHODS_WITH_BODY.has(request.method) || !hasBody(request.headers)) return done();
    done(mediaTypeRefusal(request.headers) ?? undefined);
  });
}

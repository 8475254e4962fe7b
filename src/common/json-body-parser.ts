import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The body bytes exactly as received, for routes that verify a signature over them. */
    rawBody?: Buffer;
  }
}

/**
 * The only body parser: JSON, keeping the raw bytes. On `rawOnlyRoutes` the body is not parsed at
 * all, so their handlers can verify a signature first and parse afterwards (garbage with a bad
 * signature must be a 401, not a parse error).
 */
export function registerJsonBodyParser(fastify: FastifyInstance, rawOnlyRoutes: readonly string[]): void {
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
    request.rawBody = body;
    if (request.routeOptions.url && rawOnlyRoutes.includes(request.routeOptions.url)) return done(null, undefined);
    parseJson(request, body as unknown as string, done);
  });
}

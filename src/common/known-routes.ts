import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from './app-error.js';
import { hasBody } from './http-hooks.js';

/**
 * The methods each known path takes, collected as routes are registered, so that a known path asked with
 * another method is a 405 with `Allow` (README, "Errors") rather than the 404 an unknown path gets.
 */
export class KnownRoutes {
  private readonly routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];

  /** Must be called before the application registers its routes. */
  collectFrom(fastify: FastifyInstance): void {
    fastify.addHook('onRoute', ({ url, method }) => {
      // `:param` matches one path segment, as the router does; `*` (the docs' static files) anything.
      const pattern = new RegExp(
        `^${url
          .split('/')
          .map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
          .join('/')}/?$`,
      );
      const known = this.routes.find((route) => route.pattern.source === pattern.source);
      const methods = known?.methods ?? new Set<string>();
      for (const m of Array.isArray(method) ? method : [method]) methods.add(m.toUpperCase());
      if (!known) this.routes.push({ pattern, methods });
    });
    /** A 405 for a known path; for an unknown one, `unknown`'s 404 answer or nothing (the router's 404 handler answers). */
    const refusal = (request: FastifyRequest, unknown?: () => AppError): AppError | undefined => {
      if (!request.is404) return undefined;
      const allowed = this.methodsOf(request.url.split('?')[0]);
      if (allowed.length > 0) {
        return new AppError('METHOD_NOT_ALLOWED', `${request.method} is not allowed here; the Allow header lists the methods that are`, undefined, {
          Allow: allowed.join(', '),
        });
      }
      return unknown?.();
    };
    // A request with a body is answered once it is read, so the HTTP layer's own answers (413, 415) come
    // first, as for any route; one without is answered at once, before a body-less QUERY is asked for the
    // Content-Type it does not need. The 404 error is made only when it is sent (an Error captures its stack).
    fastify.addHook('onRequest', (request, _reply, done) => {
      done(hasBody(request.headers) ? undefined : refusal(request, () => new AppError('NOT_FOUND', 'No such route or resource')));
    });
    fastify.addHook('preHandler', (request, _reply, done) => done(refusal(request)));
  }

  /** The methods `path` takes, in a stable order; none for a path no route has. */
  methodsOf(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.routes) if (route.pattern.test(path)) for (const method of route.methods) methods.add(method);
    return [...methods].sort();
  }
}

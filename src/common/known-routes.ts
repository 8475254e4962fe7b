import type { FastifyInstance } from 'fastify';
import { AppError } from './app-error';

/**
 * The methods each known path takes, collected as routes are registered, so that a known path asked with
 * another method is a 405 with `Allow` (CONTRACT §1) rather than the 404 an unknown path gets.
 */
export class KnownRoutes {
  private readonly routes: Array<{ pattern: RegExp; methods: Set<string> }> = [];

  /** Must be called before the application registers its routes. */
  collectFrom(fastify: FastifyInstance): void {
    fastify.addHook('onRoute', ({ url, method }) => {
      // `:param` matches one path segment, as the router does; `*` (the docs' static files) anything.
      const pattern = new RegExp(`^${url.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))).join('/')}/?$`);
      const known = this.routes.find((route) => route.pattern.source === pattern.source);
      const methods = known?.methods ?? new Set<string>();
      for (const m of Array.isArray(method) ? method : [method]) methods.add(m.toUpperCase());
      if (!known) this.routes.push({ pattern, methods });
    });
    fastify.addHook('onRequest', async (request) => {
      if (!request.is404) return;
      const allowed = this.methodsOf(request.url.split('?')[0]);
      if (allowed.length > 0) {
        throw new AppError('METHOD_NOT_ALLOWED', `${request.method} is not allowed here; the Allow header lists the methods that are`, undefined, {
          Allow: allowed.join(', '),
        });
      }
    });
  }

  /** The methods `path` takes, in a stable order; none for a path no route has. */
  methodsOf(path: string): string[] {
    const methods = new Set<string>();
    for (const route of this.routes) if (route.pattern.test(path)) for (const method of route.methods) methods.add(method);
    return [...methods].sort();
  }
}

import type { FastifyInstance } from 'fastify';
import { EXTERNAL_API_PREFIX } from '../auth/api-key.guard.js';
import { IDEMPOTENT_ROUTE } from './idempotency.interceptor.js';

/**
 * The README makes every POST under /api/v1 idempotent. The interceptor is put on each such route
 * rather than globally (see Idempotent), so a route added without it must stop the start-up instead of
 * silently running twice on a client's retry. Routes are seen as Fastify registers them, with the route
 * config @Idempotent() sets.
 */
export class IdempotencyCoverage {
  private readonly missing: string[] = [];

  /** Must be called before the application registers its routes. */
  watch(fastify: FastifyInstance): void {
    fastify.addHook('onRoute', ({ method, url, config }) => {
      const methods = Array.isArray(method) ? method : [method];
      const idempotent = (config as Record<string, unknown> | undefined)?.[IDEMPOTENT_ROUTE] === true;
      if (methods.includes('POST') && `${url}/`.startsWith(EXTERNAL_API_PREFIX) && !idempotent) this.missing.push(`POST ${url}`);
    });
  }

  /** Once the routes are registered: refuses to start if a POST under /api/v1 lacks @Idempotent(). */
  assertComplete(): void {
    if (this.missing.length > 0) throw new Error(`Not idempotent, though the README requires it: ${this.missing.join(', ')}. Mark them @Idempotent().`);
  }
}

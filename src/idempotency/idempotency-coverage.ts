import type { FastifyInstance } from 'fastify';
import { EXTERNAL_API_PREFIX } from '../auth/api-key.guard.js';
import { IDEMPOTENT_ROUTE } from './idempotency.interceptor.js';

/**
 * The README makes every POST under /api/v1 idempotent. The interceptor is put on each such route
 * rather than globally (see Idempotent), so a route added without it must stop the start-up instead of
 * silently running twice on a client's retry. The opposite stops it too: outside /api/v1 no API key names
 * the source a record belongs to, so an @Idempotent() route there would fail every request. Routes are seen
 * as Fastify registers them, with the route config @Idempotent() sets.
 */
export class IdempotencyCoverage {
  private readonly missing: string[] = [];
  private readonly misplaced: string[] = [];

  /** Must be called before the application registers its routes. */
  watch(fastify: FastifyInstance): void {
    fastify.addHook('onRoute', ({ method, url, config }) => {
      const methods = Array.isArray(method) ? method : [method];
      const idempotent = (config as Record<string, unknown> | undefined)?.[IDEMPOTENT_ROUTE] === true;
      const external = `${url}/`.startsWith(EXTERNAL_API_PREFIX);
      if (methods.includes('POST') && external && !idempotent) this.missing.push(`POST ${url}`);
      if (idempotent && !external) this.misplaced.push(`${methods.join(',')} ${url}`);
    });
  }

  /** Once the routes are registered: refuses to start if a POST under /api/v1 lacks @Idempotent(), or a route elsewhere has it. */
  assertComplete(): void {
    const problems: string[] = [];
    if (this.missing.length > 0) problems.push(`Not idempotent, though the README requires it: ${this.missing.join(', ')}. Mark them @Idempotent().`);
    if (this.misplaced.length > 0) {
      problems.push(
        `@Idempotent() outside ${EXTERNAL_API_PREFIX}, where no API key names the source of its records: ${this.misplaced.join(', ')}. Remove it there.`,
      );
    }
    if (problems.length > 0) throw new Error(problems.join(' '));
  }
}

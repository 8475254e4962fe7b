import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { ApiKeyEntity } from './api-key.entity.js';

/** The caller behind a valid X-API-Key; every /api/v1 handler acts for `source` only. */
export type AuthenticatedKey = Pick<ApiKeyEntity, 'id' | 'source' | 'prefix' | 'expiresAt'>;

declare module 'fastify' {
  interface FastifyRequest {
    apiKey?: AuthenticatedKey;
  }
}

export const CurrentKey = createParamDecorator((_data: unknown, ctx: ExecutionContext): AuthenticatedKey => {
  const key = ctx.switchToHttp().getRequest<FastifyRequest>().apiKey;
  // The guard runs first on every /api/v1 route; reaching here without a key is a wiring bug.
  if (!key) throw new Error('CurrentKey used on a route without ApiKeyGuard');
  return key;
});

import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error';
import { ApiKeysService } from './api-keys.service';
import { KeyRateLimiter } from './key-rate-limiter';
import { KeyUsageRecorder } from './key-usage.recorder';
import { ReadWithKeyOf } from './read-with-key';

export const EXTERNAL_API_PREFIX = '/api/v1/';

/**
 * Registered globally and keyed on the path, so no /api/v1 route can be added without it. Missing,
 * malformed, unknown, revoked and expired keys all get the same answer: nothing to probe. The
 * per-key rate limit is applied here too, so the two checks always run in the contract's order. A route's
 * ReadWithKey, if it declares one, is made in the key look-up's statement.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly usage: KeyUsageRecorder,
    private readonly rateLimiter: KeyRateLimiter,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    if (!request.routeOptions.url?.startsWith(EXTERNAL_API_PREFIX)) return true;
    const declared = this.reflector.get(ReadWithKeyOf, context.getHandler());
    const parameter = declared?.parameter(request);
    const read = declared && parameter !== undefined ? { with: declared, parameter } : undefined;
    const authentication = await this.apiKeys.authenticate(request.headers['x-api-key'], read);
    if (!authentication) throw new AppError('UNAUTHORIZED', 'A valid API key is required in the X-API-Key header');
    const { key, row } = authentication;
    request.apiKey = key;
    if (read) read.with.keep(request, row);
    this.usage.record(key.keyId);
    // Rate limiting belongs right after authentication (CONTRACT §1 order: 401, then 429).
    this.rateLimiter.consume(key.keyId);
    return true;
  }
}

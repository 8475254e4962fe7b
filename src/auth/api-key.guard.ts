import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error';
import { IDEMPOTENCY_KEY_PATTERN } from '../idempotency/idempotency.service';
import { ApiKeysService } from './api-keys.service';
import { KeyRateLimiter } from './key-rate-limiter';
import { KeyUsageRecorder } from './key-usage.recorder';

export const EXTERNAL_API_PREFIX = '/api/v1/';

/**
 * Registered globally and keyed on the path, so no /api/v1 route can be added without it. Missing,
 * malformed, unknown, revoked and expired keys all get the same answer: nothing to probe. The
 * per-key rate limit is applied here too, so the two checks always run in the contract's order.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly usage: KeyUsageRecorder,
    private readonly rateLimiter: KeyRateLimiter,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    if (!request.routeOptions.url?.startsWith(EXTERNAL_API_PREFIX)) return true;
    const idempotencyKey = ApiKeyGuard.idempotencyKeyOf(request);
    const authentication = await this.apiKeys.authenticate(request.headers['x-api-key'], idempotencyKey);
    if (!authentication) throw new AppError('UNAUTHORIZED', 'A valid API key is required in the X-API-Key header');
    const { key, storedAnswer } = authentication;
    request.apiKey = key;
    if (idempotencyKey !== null) request.storedAnswer = storedAnswer;
    this.usage.record(key.keyId);
    // Rate limiting belongs right after authentication (CONTRACT §1 order: 401, then 429).
    this.rateLimiter.consume(key.keyId);
    return true;
  }

  /** A POST's well-formed X-Idempotency-Key, read with the API key; a malformed one gets its 422 later, in order. */
  private static idempotencyKeyOf(request: FastifyRequest): string | null {
    const header = request.headers['x-idempotency-key'];
    return request.method === 'POST' && typeof header === 'string' && IDEMPOTENCY_KEY_PATTERN.test(header) ? header : null;
  }
}

import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error';
import { AppConfig } from '../config/app-config';
import { KeyRateLimiter } from './key-rate-limiter';

/**
 * RATE_LIMIT_PER_MINUTE per API key, on every /api/v1 request. Registered right after ApiKeyGuard, so the
 * two checks run in the contract's order: 401, then 429, then anything about the request itself.
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(
    private readonly limiter: KeyRateLimiter,
    private readonly config: AppConfig,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    const key = context.switchToHttp().getRequest<FastifyRequest>().apiKey;
    // Only requests ApiKeyGuard authenticated carry a key; the rest are not under /api/v1.
    if (!key) return true;
    const decision = this.limiter.take(key.keyId);
    if (!decision.allowed) {
      throw new AppError('RATE_LIMITED', `More than ${this.config.RATE_LIMIT_PER_MINUTE} requests per minute with this API key`, undefined, {
        'Retry-After': String(decision.retryAfterSeconds),
      });
    }
    return true;
  }
}

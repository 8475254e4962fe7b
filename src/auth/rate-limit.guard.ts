import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error.js';
import { RateDecision } from './gcra.js';
import { KeyRateLimiter } from './key-rate-limiter.js';

const POLICY = 'per-key';

/**
 * RATE_LIMIT_PER_MINUTE per API key, on every /api/v1 request. Registered right after ApiKeyGuard, so the
 * two checks run in the README's order: 401, then 429, then anything about the request itself. Every
 * answer to an authenticated request tells the caller its budget (RateLimit-Policy and RateLimit, IETF
 * draft httpapi-ratelimit-headers), a 429 also when to come back (Retry-After).
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(private readonly limiter: KeyRateLimiter) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const key = context.switchToHttp().getRequest<FastifyRequest>().apiKey;
    // Only requests ApiKeyGuard authenticated carry a key; the rest are not under /api/v1.
    if (!key) return true;
    const decision = await this.limiter.take(key.id);
    const headers = rateLimitHeaders(this.limiter.limit, decision);
    if (!decision.allowed) {
      throw new AppError('RATE_LIMITED', `More than ${this.limiter.limit} requests per minute with this API key`, undefined, {
        ...headers,
        'Retry-After': String(decision.retryAfterSeconds),
      });
    }
    context.switchToHttp().getResponse<FastifyReply>().headers(headers);
    return true;
  }
}

export function rateLimitHeaders(limit: number, decision: RateDecision): Record<string, string> {
  return {
    'RateLimit-Policy': `"${POLICY}";q=${limit};w=60`,
    RateLimit: `"${POLICY}";r=${decision.remaining};t=${decision.resetSeconds}`,
  };
}

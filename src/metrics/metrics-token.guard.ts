import { CanActivate, ExecutionContext, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { tokensMatch } from '../common/constant-time.js';
import { AppError } from '../common/app-error.js';
import { bearerCredential } from '../common/bearer.js';
import { AppConfig } from '../config/app-config.js';

/**
 * `/metrics` with METRICS_TOKEN set needs `Authorization: Bearer <METRICS_TOKEN>`: route names,
 * error rates and process figures tell an outsider more than they should. Unset, it stays open (for a
 * scraper on a private network) and the start says so.
 */
@Injectable()
export class MetricsTokenGuard implements CanActivate, OnModuleInit {
  constructor(private readonly config: AppConfig) {}

  onModuleInit(): void {
    if (!this.config.METRICS_TOKEN) new Logger('Metrics').warn('METRICS_TOKEN is not set: /metrics is readable by anyone who can reach the gateway');
  }

  canActivate(context: ExecutionContext): boolean {
    const expected = this.config.METRICS_TOKEN;
    if (!expected) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const presented = bearerCredential(request.headers.authorization);
    if (presented && tokensMatch(presented, expected)) return true;
    throw new AppError('UNAUTHORIZED', 'A valid metrics token is required: Authorization: Bearer <METRICS_TOKEN>');
  }
}

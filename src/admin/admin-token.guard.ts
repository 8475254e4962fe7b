import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error';
import { AdminAuthFailuresService, MAX_FAILURES_PER_MINUTE } from './admin-auth-failures.service';
import { ADMIN_TOKEN, tokensMatch } from './admin-token';

@Injectable()
export class AdminTokenGuard implements CanActivate {
  constructor(
    @Inject(ADMIN_TOKEN) private readonly adminToken: string,
    private readonly failures: AdminAuthFailuresService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const lockedOutFor = await this.failures.lockedOutFor(request.ip);
    if (lockedOutFor !== null) {
      throw new AppError('RATE_LIMITED', 'Too many failed attempts from this address; try again later', undefined, {
        'Retry-After': String(lockedOutFor),
      });
    }
    const failures = await this.failures.reserveAttempt(request.ip);
    const presented = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (presented && tokensMatch(presented, this.adminToken) && failures <= MAX_FAILURES_PER_MINUTE) {
      await this.failures.forgive(request.ip);
      return true;
    }
    if (failures > MAX_FAILURES_PER_MINUTE) {
      throw new AppError('RATE_LIMITED', 'Too many failed attempts from this address; try again later', undefined, {
        'Retry-After': String((await this.failures.lockedOutFor(request.ip)) ?? 60),
      });
    }
    throw new AppError('UNAUTHORIZED', 'A valid admin token is required: Authorization: Bearer <ADMIN_TOKEN>');
  }
}

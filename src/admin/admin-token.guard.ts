import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error';
import { AdminAuthFailuresService, MAX_FAILURES_PER_MINUTE } from './admin-auth-failures.service';
import { tokensMatch } from '../common/constant-time';
import { ADMIN_TOKEN } from './admin-token';

@Injectable()
export class AdminTokenGuard implements CanActivate {
  constructor(
    @Inject(ADMIN_TOKEN) private readonly adminToken: string,
    private readonly failures: AdminAuthFailuresService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    // Counted before the compare, so even the right token is refused once the address is locked out.
    const { failures, secondsLeft } = await this.failures.reserveAttempt(request.ip);
    if (failures > MAX_FAILURES_PER_MINUTE) {
      throw new AppError('RATE_LIMITED', 'Too many failed attempts from this address; try again later', undefined, {
        'Retry-After': String(secondsLeft),
      });
    }
    const presented = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (presented && tokensMatch(presented, this.adminToken)) {
      await this.failures.forgive(request.ip);
      return true;
    }
    throw new AppError('UNAUTHORIZED', 'A valid admin token is required: Authorization: Bearer <ADMIN_TOKEN>');
  }
}

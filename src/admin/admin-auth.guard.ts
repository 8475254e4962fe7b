import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error.js';
import { bearerCredential } from '../common/bearer.js';
import { tokensMatch } from '../common/constant-time.js';
import { hashOpaqueToken } from '../common/opaque-token.js';
import { AppConfig } from '../config/app-config.js';
import { addIsoDuration, parseIsoDuration } from '../config/iso-duration.js';
import { AdminPrincipal, RequiresRole, ROLE_RANK } from './admin-actor.js';
import { AdminAuthFailuresService, MAX_FAILURES_PER_MINUTE } from './admin-auth-failures.service.js';
import { ADMIN_TOKEN } from './admin-token.js';
import { ADMIN_TOKEN_PREFIX } from './admins.service.js';
import { AdminsRepository } from './admins.repository.js';
import { cookieValue, publicOrigin, SESSION_COOKIE } from './admin-session.js';

const SAFE_METHODS = new Set(['GET', 'HEAD']);
const UNAUTHORIZED_DETAIL =
  'A valid admin credential is required: Authorization: Bearer <token> (a personal adm_tax_… token or ADMIN_TOKEN), or a console session';

/**
 * Every /admin REST call: who it is (the break-glass ADMIN_TOKEN, a personal `adm_tax_` token, or a console
 * session cookie), whether the role allows the route (403 FORBIDDEN otherwise, nothing changed), and for a
 * cookie-authenticated write the CSRF check (the page's own origin, or its CSRF token). Each credential is
 * looked up in the database on every request, so a revoked token or a disabled admin stops at once on every
 * instance. Past 10 failed attempts from one address within a minute, its further failures are answered 429;
 * a good credential from it still passes.
 */
@Injectable()
export class AdminAuthGuard implements CanActivate {
  constructor(
    @Inject(ADMIN_TOKEN) private readonly adminToken: string,
    private readonly failures: AdminAuthFailuresService,
    private readonly admins: AdminsRepository,
    private readonly config: AppConfig,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    // A request without any credential guesses nothing (the console asks for its session on every load, signed
    // in or not), so it is refused without counting against the address's lockout.
    if (!bearerCredential(request.headers.authorization) && !cookieValue(request.headers.cookie, SESSION_COOKIE)) {
      throw new AppError('UNAUTHORIZED', UNAUTHORIZED_DETAIL);
    }
    const principal = await this.identify(request);
    if (!principal) {
      // Only failures count and only failures are refused: others' guesses from a shared address (a proxy
      // without TRUSTED_PROXIES, an office) never lock out an administrator whose credential is good.
      const { failures, secondsLeft } = await this.failures.recordFailure(request.ip);
      if (failures > MAX_FAILURES_PER_MINUTE) {
        throw new AppError('RATE_LIMITED', 'Too many failed attempts from this address; try again later', undefined, { 'Retry-After': String(secondsLeft) });
      }
      throw new AppError('UNAUTHORIZED', UNAUTHORIZED_DETAIL);
    }
    if (principal.session && !SAFE_METHODS.has(request.method) && !this.passesCsrfCheck(request, principal.session.csrfToken)) {
      throw new AppError('FORBIDDEN', 'A write with the console session must come from the console (its origin or its CSRF token)');
    }
    const required = this.reflector.get(RequiresRole, context.getHandler()) ?? (SAFE_METHODS.has(request.method) ? 'viewer' : 'admin');
    if (ROLE_RANK[principal.role] < ROLE_RANK[required]) {
      throw new AppError('FORBIDDEN', `This needs the ${required} role; yours is ${principal.role}`);
    }
    request.admin = principal;
    return true;
  }

  private async identify(request: FastifyRequest): Promise<AdminPrincipal | null> {
    const bearer = bearerCredential(request.headers.authorization);
    if (bearer) {
      if (bearer.startsWith(ADMIN_TOKEN_PREFIX)) {
        const admin = await this.admins.authenticateToken(hashOpaqueToken(bearer));
        return admin && { actor: { type: 'token', adminId: admin.adminId, email: admin.email }, role: admin.role, tokenExpiresAt: admin.expiresAt };
      }
      return tokensMatch(bearer, this.adminToken) ? { actor: { type: 'bootstrap', adminId: null, email: null }, role: 'admin' } : null;
    }
    const cookie = cookieValue(request.headers.cookie, SESSION_COOKIE);
    if (!cookie) return null;
    const session = await this.admins.authenticateSession(hashOpaqueToken(cookie), this.config.ADMIN_SESSION_IDLE_SECONDS);
    return (
      session && {
        actor: { type: 'session', adminId: session.adminId, email: session.email },
        role: session.role,
        session: { id: session.sessionId, csrfToken: session.csrfToken },
        sessionTokenCeiling: addIsoDuration(new Date(), parseIsoDuration(this.config.ADMIN_TOKEN_MAX_TTL)!),
      }
    );
  }

  /** The browser says where a write comes from (Origin), or the page proves it read its session's token. */
  private passesCsrfCheck(request: FastifyRequest, csrfToken: string): boolean {
    const presented = request.headers['x-csrf-token'];
    if (typeof presented === 'string' && tokensMatch(presented, csrfToken)) return true;
    const origin = request.headers.origin;
    return typeof origin === 'string' && origin === publicOrigin(this.config.PUBLIC_URL, request);
  }
}

import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import type { AdminRole } from './admin.entity.js';
import type { ActorType } from './audit-log.entity.js';

/** Who acts: `adminId` and `email` are null for the break-glass ADMIN_TOKEN and the CLI. */
export interface Actor {
  type: ActorType;
  adminId: string | null;
  email: string | null;
}

/** What the admin guard established about a request. */
export interface AdminPrincipal {
  actor: Actor;
  role: AdminRole;
  /** A console session's id and the CSRF token its page sends with every write. */
  session?: { id: string; csrfToken: string };
  /** When the personal token making the request expires: no admin token it makes may outlive it. Absent otherwise. */
  tokenExpiresAt?: Date | null;
  /** For a console session: the latest expiry a token it makes may have (ADMIN_TOKEN_MAX_TTL from now). */
  sessionTokenCeiling?: Date;
}

/** Who did it and from where: what an audit entry records, passed to every service that changes something. */
export interface AuditContext {
  actor: Actor;
  remoteAddress: string;
}

export const ROLE_RANK: Record<AdminRole, number> = { viewer: 1, operator: 2, admin: 3 };

/**
 * The least role a route needs. Without it a GET needs `viewer` and anything else `admin`
 * (README, "Administration": viewers read, operators also retry deliveries and switch endpoints, admins do everything).
 */
export const RequiresRole = Reflector.createDecorator<AdminRole>();

declare module 'fastify' {
  interface FastifyRequest {
    admin?: AdminPrincipal;
  }
}

/** The request's administrator and address, for the audit entry of what the route changes. */
export const AdminContext = createParamDecorator((_data: unknown, ctx: ExecutionContext): AuditContext & AdminPrincipal => {
  const request = ctx.switchToHttp().getRequest<FastifyRequest>();
  // The admin guard runs first on every admin route; reaching here without a principal is a wiring bug.
  if (!request.admin) throw new Error('AdminContext used on a route without AdminAuthGuard');
  return { ...request.admin, remoteAddress: request.ip };
});

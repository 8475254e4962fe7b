import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { decodeKeysetCursor, encodeKeysetCursor, pageOf } from '../common/cursor.js';
import { displayParts, generateOpaqueToken, hashOpaqueToken } from '../common/opaque-token.js';
import { isUuid } from '../common/validation.js';
import { EntityManager } from 'typeorm';
import { AdminPrincipal, AuditContext } from './admin-actor.js';
import type { AdminEntity, AdminRole, AdminTokenEntity } from './admin.entity.js';
import type { AuditChanges } from './audit-log.entity.js';
import { AdminsRepository } from './admins.repository.js';
import { AuditLogService } from './audit-log.service.js';
import { Transactions } from '../database/transaction.js';

export const ADMIN_TOKEN_PREFIX = 'adm_tax_';

export interface AdminView {
  id: string;
  email: string;
  name: string | null;
  role: AdminRole;
  disabledAt: string | null;
  createdAt: string;
  lastSeenAt: string | null;
}

export interface AdminTokenView {
  id: string;
  adminId: string;
  name: string | null;
  prefix: string;
  last4: string;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

/** An account's fields before and after a change, those that changed (an admin has no secret among them). */
function changesOf(before: AdminEntity, after: AdminEntity): AuditChanges {
  const fields = { role: (a: AdminEntity) => a.role, name: (a: AdminEntity) => a.name, disabled: (a: AdminEntity) => a.disabledAt !== null };
  const changes: AuditChanges = {};
  for (const [field, read] of Object.entries(fields)) {
    const [from, to] = [read(before), read(after)];
    if (from !== to) changes[field] = { from, to };
  }
  return changes;
}

/** Administrators' accounts and personal tokens (README, "Administration"); each change and its audit entry commit together. */
@Injectable()
export class AdminsService {
  constructor(
    private readonly transactions: Transactions,
    private readonly admins: AdminsRepository,
    private readonly audit: AuditLogService,
  ) {}

  create(context: AuditContext, input: { email: string; role: AdminRole; name?: string }): Promise<AdminView> {
    return this.transactions.managed(async (tx) => {
      const admin = await this.admins.insert(tx, { email: input.email, name: input.name ?? null, role: input.role });
      if (!admin) throw new AppError('DUPLICATE_ADMIN', 'An administrator with this email exists');
      await this.audit.record(tx, context, { action: 'admin.created', target: { type: 'admin', id: admin.id } });
      return toAdminView(admin);
    });
  }

  async page(cursor: string | undefined, limit: number): Promise<{ data: AdminView[]; nextCursor: string | null }> {
    const rows = await this.admins.page(cursor ? decodeKeysetCursor('m', cursor, 'cursor') : null, limit + 1);
    const page = pageOf(rows, limit, (last) => encodeKeysetCursor('m', last.position, last.id));
    return { data: page.rows.map(toAdminView), nextCursor: page.nextCursor };
  }

  async get(id: string): Promise<AdminView> {
    return toAdminView(await this.find(id));
  }

  /**
   * A disabled admin's tokens and sessions stop on the next request: each is checked against the account
   * every time. Disabling also ends the admin's console sessions for good; enabling the account again
   * brings back its tokens (revoke those separately), never a session.
   */
  update(context: AuditContext, id: string, change: { role?: AdminRole; name?: string | null; disabled?: boolean }): Promise<AdminView> {
    return this.transactions.managed(async (tx) => {
      const current = await this.find(id, tx);
      // Disabling keeps the first time it was disabled; enabling clears it.
      const disabledAt = change.disabled === undefined ? undefined : change.disabled ? (current.disabledAt ?? new Date()) : null;
      const admin = await this.admins.update(tx, id, { role: change.role, name: change.name, disabledAt });
      if (change.disabled) await this.admins.endSessionsOf(tx, id);
      await this.audit.record(tx, context, { action: 'admin.updated', target: { type: 'admin', id }, changes: changesOf(current, admin) });
      return toAdminView(admin);
    });
  }

  /** An `admin` issues a token for anyone; anybody else only for themself. The token is in this answer only. */
  issueToken(
    principal: AdminPrincipal & AuditContext,
    adminId: string,
    input: { name?: string; expiresAt?: string },
  ): Promise<AdminTokenView & { token: string }> {
    this.mayManageTokensOf(principal, adminId);
    const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
    if (expiresAt && expiresAt <= new Date()) throw AppError.validation([{ field: 'expiresAt', message: 'must be in the future' }]);
    const outlived = principal.tokenExpiresAt;
    if (outlived && (!expiresAt || expiresAt > outlived)) {
      // A token that expires cannot extend itself by making another (README, "Administration").
      throw AppError.validation([{ field: 'expiresAt', message: `must be at most ${outlived.toISOString()}, when the token making this request expires` }]);
    }
    const ceiling = principal.sessionTokenCeiling;
    if (ceiling && (!expiresAt || expiresAt > ceiling)) {
      // A session lasts hours: what it makes must not outlive it for good (README, "Administration").
      throw AppError.validation([
        { field: 'expiresAt', message: `is required in a console session, at most ${ceiling.toISOString()} (ADMIN_TOKEN_MAX_TTL from now)` },
      ]);
    }
    return this.transactions.managed(async (tx) => {
      const admin = await this.find(adminId, tx);
      if (admin.disabledAt) throw new AppError('INVALID_STATE_TRANSITION', 'A disabled administrator gets no new token');
      const token = generateOpaqueToken(ADMIN_TOKEN_PREFIX);
      const row = await this.admins.insertToken(tx, {
        adminId,
        name: input.name ?? null,
        tokenHash: hashOpaqueToken(token),
        ...displayParts(token),
        expiresAt,
      });
      await this.audit.record(tx, principal, { action: 'admin_token.created', target: { type: 'admin_token', id: row.id } });
      return { ...toTokenView(row), token };
    });
  }

  async tokensOf(adminId: string): Promise<AdminTokenView[]> {
    await this.find(adminId);
    return (await this.admins.tokensOf(adminId)).map(toTokenView);
  }

  /** By an `admin`, or by the token's own admin; revoking twice keeps the first time. */
  revokeToken(principal: AdminPrincipal & AuditContext, tokenId: string): Promise<AdminTokenView> {
    return this.transactions.managed(async (tx) => {
      const token = isUuid(tokenId) ? await this.admins.findTokenForUpdate(tx, tokenId) : null;
      if (!token) throw new AppError('NOT_FOUND', 'No such admin token');
      this.mayManageTokensOf(principal, token.adminId);
      const revoked = await this.admins.revokeToken(tx, tokenId);
      await this.audit.record(tx, principal, { action: 'admin_token.revoked', target: { type: 'admin_token', id: tokenId } });
      return toTokenView(revoked);
    });
  }

  private mayManageTokensOf(principal: AdminPrincipal, adminId: string): void {
    if (principal.role !== 'admin' && principal.actor.adminId !== adminId) {
      throw new AppError('FORBIDDEN', "Only an admin manages another administrator's tokens");
    }
  }

  /** `lockIn`: locked (FOR UPDATE) in that transaction. */
  private async find(id: string, lockIn?: EntityManager): Promise<AdminEntity> {
    const admin = isUuid(id) ? await (lockIn ? this.admins.findForUpdate(lockIn, id) : this.admins.find(id)) : null;
    if (!admin) throw new AppError('NOT_FOUND', 'No such administrator');
    return admin;
  }
}

export function toAdminView(admin: AdminEntity): AdminView {
  return {
    id: admin.id,
    email: admin.email,
    name: admin.name,
    role: admin.role,
    disabledAt: iso(admin.disabledAt),
    createdAt: admin.createdAt.toISOString(),
    lastSeenAt: iso(admin.lastSeenAt),
  };
}

function toTokenView(token: AdminTokenEntity): AdminTokenView {
  return {
    id: token.id,
    adminId: token.adminId,
    name: token.name,
    prefix: token.prefix,
    last4: token.last4,
    createdAt: token.createdAt.toISOString(),
    expiresAt: iso(token.expiresAt),
    revokedAt: iso(token.revokedAt),
    lastUsedAt: iso(token.lastUsedAt),
  };
}

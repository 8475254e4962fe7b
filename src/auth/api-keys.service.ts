import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { decodeKeysetCursor, encodeKeysetCursor, pageOf } from '../common/cursor.js';
import { isUuid } from '../common/validation.js';
import { EntityManager } from 'typeorm';
import { displayParts, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key-format.js';
import { ApiKeyRow, ApiKeysRepository } from './api-keys.repository.js';
import { AuthenticatedKey } from './authenticated-key.js';
import { KeyUsageRecorder } from './key-usage.recorder.js';

export type ApiKeyStatus = 'ACTIVE' | 'REVOKED' | 'EXPIRED';

export interface ApiKeyView {
  id: string;
  source: string;
  name: string | null;
  prefix: string;
  last4: string;
  status: ApiKeyStatus;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

export interface IssuedApiKey {
  row: ApiKeyRow;
  /** The plaintext, to be shown once and then forgotten. */
  key: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** API keys: issued, checked, revoked and rotated by the rules of the README ("API", "Administration"). */
@Injectable()
export class ApiKeysService {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly usage: KeyUsageRecorder,
  ) {}

  /**
   * The key behind `presented`, or null: missing, malformed, unknown, revoked and expired all look the
   * same. A key that authenticates counts as used (lastUsedAt).
   */
  async authenticate(presented: unknown): Promise<AuthenticatedKey | null> {
    if (!isWellFormedApiKey(presented)) return null;
    const key = await this.keys.findValidByHash(hashApiKey(presented));
    if (key) this.usage.record(key.id);
    return key;
  }

  /** `tx`: the transaction the key is issued in, with its audit entry. */
  async issue(tx: EntityManager, input: { source: string; name?: string | null; expiresAt?: Date | null }): Promise<IssuedApiKey> {
    const key = generateApiKey();
    const row = await this.keys.insert(tx, {
      source: input.source,
      name: input.name ?? null,
      expiresAt: input.expiresAt ?? null,
      keyHash: hashApiKey(key),
      ...displayParts(key),
    });
    return { row, key };
  }

  /** Newest first, `limit` per page; `cursor` the nextCursor of the page before. */
  async page(filter: { source?: string; cursor?: string }, limit: number): Promise<{ rows: ApiKeyRow[]; nextCursor: string | null }> {
    const rows = await this.keys.page(filter.source, filter.cursor ? decodeKeysetCursor('k', filter.cursor, 'cursor') : null, limit + 1);
    return pageOf(rows, limit, (last) => encodeKeysetCursor('k', last.position, last.id));
  }

  /** `lockIn` locks the key (FOR UPDATE) in that transaction. */
  async get(id: string, lockIn?: EntityManager): Promise<ApiKeyRow> {
    const key = isUuid(id) ? await (lockIn ? this.keys.findForUpdate(lockIn, id) : this.keys.find(id)) : null;
    if (!key) throw new AppError('NOT_FOUND', 'No such API key');
    return key;
  }

  /** Revokes now; a key already revoked keeps its original time (revoking twice is harmless). */
  async revoke(tx: EntityManager, id: string): Promise<ApiKeyRow> {
    const key = await this.get(id, tx);
    const now = new Date();
    if (key.revokedAt && key.revokedAt <= now) return key;
    return this.keys.setRevoked(tx, key, now, key.replacedById);
  }

  /** Issues a successor with the same source, name and expiry; the old key stops after `graceSeconds`. */
  async rotate(tx: EntityManager, id: string, graceSeconds: number): Promise<{ old: ApiKeyRow; issued: IssuedApiKey }> {
    const old = await this.get(id, tx);
    const status = ApiKeysService.statusOf(old);
    if (status !== 'ACTIVE') throw new AppError('INVALID_STATE_TRANSITION', `Only an active key can be rotated; this one is ${status}`);
    // A second rotation would issue a second successor and could lengthen the old key's grace period.
    if (old.replacedById) throw new AppError('INVALID_STATE_TRANSITION', 'This key was already rotated; rotate its successor instead');
    const issued = await this.issue(tx, { source: old.source, name: old.name, expiresAt: old.expiresAt });
    const end = new Date(Date.now() + graceSeconds * 1000);
    const revokedAt = old.expiresAt && old.expiresAt < end ? old.expiresAt : end;
    return { old: await this.keys.setRevoked(tx, old, revokedAt, issued.row.id), issued };
  }

  static statusOf(key: Pick<ApiKeyRow, 'revokedAt' | 'expiresAt'>, now = new Date()): ApiKeyStatus {
    if (key.revokedAt && key.revokedAt <= now) return 'REVOKED';
    if (key.expiresAt && key.expiresAt <= now) return 'EXPIRED';
    return 'ACTIVE';
  }

  static view(key: ApiKeyRow): ApiKeyView {
    return {
      id: key.id,
      source: key.source,
      name: key.name,
      prefix: key.prefix,
      last4: key.last4,
      status: ApiKeysService.statusOf(key),
      createdAt: key.createdAt.toISOString(),
      expiresAt: iso(key.expiresAt),
      revokedAt: iso(key.revokedAt),
      lastUsedAt: iso(key.lastUsedAt),
    };
  }
}

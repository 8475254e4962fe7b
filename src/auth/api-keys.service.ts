import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { isUuid } from '../common/validation';
import { Database, Db, statement, Transaction } from '../database/database';
import { displayParts, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key-format';
import { StoredAnswer, storedAnswerColumns } from '../idempotency/stored-answer';
import { ApiKeyEntity } from './api-key.entity';
import { AuthenticatedKey } from './authenticated-key';

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
  entity: ApiKeyEntity;
  /** The plaintext, to be shown once and then forgotten. */
  key: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export interface Authentication {
  key: AuthenticatedKey;
  /** The live stored answer of the idempotency key asked about, or null (also when none was asked about). */
  storedAnswer: StoredAnswer | null;
}

/**
 * Validity is decided by the database clock, so a revocation or expiry holds on the very next request
 * on every instance. A POST's idempotency key ($2) is looked up in the same statement: a replay then
 * costs one round trip, and a first request one fewer.
 */
export const AUTHENTICATE = statement(
  'api-key-authenticate',
  `SELECT k.id AS "keyId", k.source, k.prefix, k.expires_at AS "expiresAt", ${storedAnswerColumns('r')}
     FROM api_keys k
     LEFT JOIN idempotency_records r ON r.source = k.source AND r.idempotency_key = $2::varchar AND r.expires_at > now()
    WHERE k.key_hash = $1 AND (k.revoked_at IS NULL OR k.revoked_at > now()) AND (k.expires_at IS NULL OR k.expires_at > now())`,
);

@Injectable()
export class ApiKeysService {
  constructor(private readonly db: Database) {}

  /** One indexed look-up by hash, a named statement: the first step of every /api/v1 request. */
  async authenticate(presented: unknown, idempotencyKey: string | null = null): Promise<Authentication | null> {
    if (!isWellFormedApiKey(presented)) return null;
    const [row] = await this.db.query<AuthenticatedKey & Partial<StoredAnswer>>(AUTHENTICATE, [hashApiKey(presented), idempotencyKey]);
    if (!row) return null;
    const { keyId, source, prefix, expiresAt, fingerprint, status, body, location } = row;
    return {
      key: { keyId, source, prefix, expiresAt },
      storedAnswer: fingerprint == null ? null : { fingerprint, status: status!, body: body!, location: location ?? null },
    };
  }

  async issue(db: Db, input: { source: string; name?: string | null; expiresAt?: Date | null }): Promise<IssuedApiKey> {
    const key = generateApiKey();
    const manager = db.manager;
    const entity = manager.create(ApiKeyEntity, {
      source: input.source,
      name: input.name ?? null,
      expiresAt: input.expiresAt ?? null,
      keyHash: hashApiKey(key),
      ...displayParts(key),
    });
    return { entity: await manager.save(entity), key };
  }

  list(source?: string): Promise<ApiKeyEntity[]> {
    return this.db.manager.find(ApiKeyEntity, { where: source ? { source } : {}, order: { createdAt: 'DESC', id: 'DESC' } });
  }

  /** `lockIn` locks the key (FOR UPDATE) in that transaction. */
  async get(id: string, lockIn?: Transaction): Promise<ApiKeyEntity> {
    if (!isUuid(id)) throw new AppError('NOT_FOUND', 'No such API key');
    const query = (lockIn ?? this.db).manager.createQueryBuilder(ApiKeyEntity, 'k').where('k.id = :id', { id });
    const key = await (lockIn ? query.setLock('pessimistic_write') : query).getOne();
    if (!key) throw new AppError('NOT_FOUND', 'No such API key');
    return key;
  }

  /** Revokes now; a key already revoked keeps its original time (revoking twice is harmless). */
  async revoke(tx: Transaction, id: string): Promise<ApiKeyEntity> {
    const key = await this.get(id, tx);
    const now = new Date();
    if (!key.revokedAt || key.revokedAt > now) {
      key.revokedAt = now;
      await tx.manager.save(key);
    }
    return key;
  }

  /** Issues a successor with the same source, name and expiry; the old key stops after `graceSeconds`. */
  async rotate(tx: Transaction, id: string, graceSeconds: number): Promise<{ old: ApiKeyEntity; issued: IssuedApiKey }> {
    const old = await this.get(id, tx);
    if (ApiKeysService.statusOf(old) !== 'ACTIVE') {
      throw new AppError('INVALID_STATE_TRANSITION', `Only an active key can be rotated; this one is ${ApiKeysService.statusOf(old)}`);
    }
    // A second rotation would issue a second successor and could lengthen the old key's grace period.
    if (old.replacedById) throw new AppError('INVALID_STATE_TRANSITION', 'This key was already rotated; rotate its successor instead');
    const issued = await this.issue(tx, { source: old.source, name: old.name, expiresAt: old.expiresAt });
    const end = new Date(Date.now() + graceSeconds * 1000);
    old.revokedAt = old.expiresAt && old.expiresAt < end ? old.expiresAt : end;
    old.replacedById = issued.entity.id;
    await tx.manager.save(old);
    return { old, issued };
  }

  static statusOf(key: ApiKeyEntity, now = new Date()): ApiKeyStatus {
    if (key.revokedAt && key.revokedAt <= now) return 'REVOKED';
    if (key.expiresAt && key.expiresAt <= now) return 'EXPIRED';
    return 'ACTIVE';
  }

  static view(key: ApiKeyEntity): ApiKeyView {
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

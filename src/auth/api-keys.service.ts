import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { isUuid } from '../common/validation';
import { Database, Db, Statement, statement, Transaction } from '../database/database';
import { displayParts, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key-format';
import { ApiKeyEntity } from './api-key.entity';
import { AuthenticatedKey } from './authenticated-key';
import type { ReadWithKey } from './read-with-key';

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
  /** The look-up's row: the key's `key:` columns and, when a ReadWithKey was made with it, the read's (all null if it found nothing). */
  row: Record<string, unknown>;
}

const KEY_COLUMNS = `k.id AS "key:id", k.source AS "key:source", k.prefix AS "key:prefix", k.expires_at AS "key:expiresAt"`;
/** Validity is decided by the database clock, so a revocation or expiry holds on the very next request on every instance. */
const VALID_KEY = `k.key_hash = $1 AND (k.revoked_at IS NULL OR k.revoked_at > now()) AND (k.expires_at IS NULL OR k.expires_at > now())`;

const AUTHENTICATE = statement('api-key-authenticate', `SELECT ${KEY_COLUMNS} FROM api_keys k WHERE ${VALID_KEY}`);

const statementsWithRead = new Map<ReadWithKey, Statement>();

/** The key look-up and `read` in one statement (a LEFT JOIN: a key without the read's row still authenticates). */
export function authenticateWith(read: ReadWithKey): Statement {
  let combined = statementsWithRead.get(read);
  if (!combined) {
    combined = statement(`api-key-authenticate+${read.name}`, `SELECT ${KEY_COLUMNS}, x.* FROM api_keys k LEFT JOIN LATERAL (${read.sql}) x ON true WHERE ${VALID_KEY}`);
    statementsWithRead.set(read, combined);
  }
  return combined;
}

@Injectable()
export class ApiKeysService {
  constructor(private readonly db: Database) {}

  /**
   * One indexed look-up by hash, a named statement: the first step of every /api/v1 request. With a `read`
   * whose parameter applies, that read is made in the same statement.
   */
  async authenticate(presented: unknown, read?: { with: ReadWithKey; parameter: string }): Promise<Authentication | null> {
    if (!isWellFormedApiKey(presented)) return null;
    const hash = hashApiKey(presented);
    const [row] = await this.db.query<Record<string, unknown>>(read ? authenticateWith(read.with) : AUTHENTICATE, read ? [hash, read.parameter] : [hash]);
    if (!row) return null;
    const key = { keyId: row['key:id'], source: row['key:source'], prefix: row['key:prefix'], expiresAt: row['key:expiresAt'] } as AuthenticatedKey;
    return { key, row };
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

import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { AppError } from '../common/app-error';
import { isUuid } from '../common/validation';
import { displayParts, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key-format';
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

@Injectable()
export class ApiKeysService {
  constructor(@InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>) {}

  /**
   * One indexed lookup by hash, with validity decided by the database clock, so a revocation or
   * expiry holds on the very next request on every instance.
   */
  async authenticate(presented: unknown): Promise<AuthenticatedKey | null> {
    if (!isWellFormedApiKey(presented)) return null;
    const key = await this.keys
      .createQueryBuilder('k')
      .where('k.key_hash = :hash', { hash: hashApiKey(presented) })
      .andWhere('(k.revoked_at IS NULL OR k.revoked_at > now())')
      .andWhere('(k.expires_at IS NULL OR k.expires_at > now())')
      .getOne();
    return key ? { keyId: key.id, source: key.source, prefix: key.prefix, expiresAt: key.expiresAt } : null;
  }

  async issue(manager: EntityManager, input: { source: string; name?: string | null; expiresAt?: Date | null }): Promise<IssuedApiKey> {
    const key = generateApiKey();
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
    return this.keys.find({ where: source ? { source } : {}, order: { createdAt: 'DESC', id: 'DESC' } });
  }

  async get(id: string, manager: EntityManager = this.keys.manager, lock = false): Promise<ApiKeyEntity> {
    if (!isUuid(id)) throw new AppError('NOT_FOUND', 'No such API key');
    const query = manager.createQueryBuilder(ApiKeyEntity, 'k').where('k.id = :id', { id });
    const key = await (lock ? query.setLock('pessimistic_write') : query).getOne();
    if (!key) throw new AppError('NOT_FOUND', 'No such API key');
    return key;
  }

  /** Revokes now; a key already revoked keeps its original time (revoking twice is harmless). */
  async revoke(manager: EntityManager, id: string): Promise<ApiKeyEntity> {
    const key = await this.get(id, manager, true);
    const now = new Date();
    if (!key.revokedAt || key.revokedAt > now) {
      key.revokedAt = now;
      await manager.save(key);
    }
    return key;
  }

  /** Issues a successor with the same source, name and expiry; the old key stops after `graceSeconds`. */
  async rotate(manager: EntityManager, id: string, graceSeconds: number): Promise<{ old: ApiKeyEntity; issued: IssuedApiKey }> {
    const old = await this.get(id, manager, true);
    if (ApiKeysService.statusOf(old) !== 'ACTIVE') {
      throw new AppError('INVALID_STATE_TRANSITION', `Only an active key can be rotated; this one is ${ApiKeysService.statusOf(old)}`);
    }
    // A second rotation would issue a second successor and could lengthen the old key's grace period.
    if (old.replacedById) throw new AppError('INVALID_STATE_TRANSITION', 'This key was already rotated; rotate its successor instead');
    const issued = await this.issue(manager, { source: old.source, name: old.name, expiresAt: old.expiresAt });
    const end = new Date(Date.now() + graceSeconds * 1000);
    old.revokedAt = old.expiresAt && old.expiresAt < end ? old.expiresAt : end;
    old.replacedById = issued.entity.id;
    await manager.save(old);
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

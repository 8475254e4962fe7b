import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { selectColumns } from '../database/entity-sql.js';
import { PreparedStatement } from '../database/prepared-statement.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { AuthenticatedKey } from './authenticated-key.js';

/** A key as administration sees it: everything but its hash. */
export type ApiKeyRow = Omit<ApiKeyEntity, 'keyHash'>;

export type NewApiKey = Pick<ApiKeyEntity, 'source' | 'name' | 'expiresAt' | 'keyHash' | 'prefix' | 'last4'>;

const AUTHENTICATED: readonly (keyof AuthenticatedKey)[] = ['id', 'source', 'prefix', 'expiresAt'];

/** Every query of the api_keys table. */
@Injectable()
export class ApiKeysRepository {
  /**
   * The first step of every /api/v1 request: one indexed look-up by hash. Validity is decided by the
   * database clock, so a revocation or expiry holds on the very next request on every instance.
   */
  private readonly authenticate: PreparedStatement<AuthenticatedKey>;

  constructor(@InjectRepository(ApiKeyEntity) private readonly keys: Repository<ApiKeyEntity>) {
    this.authenticate = new PreparedStatement(
      'api-key-authenticate',
      `SELECT ${selectColumns(keys.metadata, { only: AUTHENTICATED })} FROM api_keys
        WHERE key_hash = $1 AND (revoked_at IS NULL OR revoked_at > now()) AND (expires_at IS NULL OR expires_at > now())`,
    );
  }

  async findValidByHash(hash: string): Promise<AuthenticatedKey | null> {
    const [key] = await this.authenticate.run(this.keys.manager, [hash]);
    return key ?? null;
  }

  /** `tx`: the transaction the key is issued in (with its audit entry). */
  async insert(tx: EntityManager, key: NewApiKey): Promise<ApiKeyRow> {
    const { id } = await tx.getRepository(ApiKeyEntity).save(tx.create(ApiKeyEntity, key));
    return tx.getRepository(ApiKeyEntity).findOneByOrFail({ id });
  }

  /** Newest first, of one source or all; `before` the cursor's position (created_at in µs) and id. */
  page(source: string | undefined, before: { position: string; id: string } | null, limit: number): Promise<ApiKeyRow[]> {
    const query = this.keys.createQueryBuilder('k');
    if (source) query.andWhere('k.source = :source', { source });
    if (before) query.andWhere('(k.created_at, k.id) < (to_timestamp(CAST(:position AS bigint) / 1000000.0), CAST(:id AS uuid))', before);
    return query.orderBy('k.createdAt', 'DESC').addOrderBy('k.id', 'DESC').limit(limit).getMany();
  }

  find(id: string): Promise<ApiKeyRow | null> {
    return this.keys.findOneBy({ id });
  }

  /** Locked (FOR UPDATE) until `tx` ends. */
  findForUpdate(tx: EntityManager, id: string): Promise<ApiKeyRow | null> {
    return tx.getRepository(ApiKeyEntity).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  async setRevoked(tx: EntityManager, key: ApiKeyRow, revokedAt: Date, replacedById: string | null): Promise<ApiKeyRow> {
    await tx.getRepository(ApiKeyEntity).update({ id: key.id }, { revokedAt, replacedById });
    return { ...key, revokedAt, replacedById };
  }

  /** When each key was last used, in one statement (unnest: a value list a QueryBuilder cannot say); never moves back. */
  async recordUsage(usage: ReadonlyMap<string, Date>): Promise<void> {
    await this.keys.query(
      `UPDATE api_keys AS k SET last_used_at = GREATEST(k.last_used_at, u.used_at)
         FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, used_at)
        WHERE k.id = u.id`,
      [[...usage.keys()], [...usage.values()].map((at) => at.toISOString())],
    );
  }
}

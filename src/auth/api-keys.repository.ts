import { Injectable } from '@nestjs/common';
import { Database, Queryable } from '../database/database';
import { sql } from '../database/sql';
import { AuthenticatedKey } from './authenticated-key';

/** A key as administration sees it: everything but its hash. */
export interface ApiKeyRow {
  id: string;
  source: string;
  name: string | null;
  prefix: string;
  last4: string;
  createdAt: Date;
  expiresAt: Date | null;
  /** May lie in the future: a rotated key stays valid until the end of its grace period. */
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  replacedById: string | null;
}

const COLUMNS = `id, source, name, prefix, last4, created_at AS "createdAt", expires_at AS "expiresAt", revoked_at AS "revokedAt",
  last_used_at AS "lastUsedAt", replaced_by_id AS "replacedById"`;

/** Validity is decided by the database clock, so a revocation or expiry holds on the very next request on every instance. */
const AUTHENTICATE = sql(
  'api-key-authenticate',
  `SELECT id AS "keyId", source, prefix, expires_at AS "expiresAt" FROM api_keys
    WHERE key_hash = $1 AND (revoked_at IS NULL OR revoked_at > now()) AND (expires_at IS NULL OR expires_at > now())`,
);

const INSERT = sql(
  'api-key-insert',
  `INSERT INTO api_keys (source, name, expires_at, key_hash, prefix, last4) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
);

const LIST = sql('api-key-list', `SELECT ${COLUMNS} FROM api_keys WHERE $1::varchar IS NULL OR source = $1 ORDER BY created_at DESC, id DESC`);

const FIND = sql('api-key-find', `SELECT ${COLUMNS} FROM api_keys WHERE id = $1`);

const FIND_FOR_UPDATE = sql('api-key-find-for-update', `SELECT ${COLUMNS} FROM api_keys WHERE id = $1 FOR UPDATE`);

const SET_REVOKED = sql('api-key-set-revoked', `UPDATE api_keys SET revoked_at = $2, replaced_by_id = $3 WHERE id = $1 RETURNING ${COLUMNS}`);

const RECORD_USAGE = sql(
  'api-key-usage',
  `UPDATE api_keys AS k SET last_used_at = GREATEST(k.last_used_at, u.used_at)
     FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, used_at)
    WHERE k.id = u.id`,
);

/** Every query of the api_keys table. */
@Injectable()
export class ApiKeysRepository {
  constructor(private readonly db: Database) {}

  /** One indexed look-up by hash: the first step of every /api/v1 request. */
  async findValidByHash(hash: string): Promise<AuthenticatedKey | null> {
    const [key] = await this.db.query<AuthenticatedKey>(AUTHENTICATE, [hash]);
    return key ?? null;
  }

  async insert(db: Queryable, key: { source: string; name: string | null; expiresAt: Date | null; hash: string; prefix: string; last4: string }): Promise<ApiKeyRow> {
    const [row] = await db.query<ApiKeyRow>(INSERT, [key.source, key.name, key.expiresAt, key.hash, key.prefix, key.last4]);
    return row;
  }

  list(source: string | undefined): Promise<ApiKeyRow[]> {
    return this.db.query<ApiKeyRow>(LIST, [source ?? null]);
  }

  /** `forUpdate`: locked until the transaction `db` ends. */
  async find(db: Queryable, id: string, { forUpdate = false } = {}): Promise<ApiKeyRow | null> {
    const [row] = await db.query<ApiKeyRow>(forUpdate ? FIND_FOR_UPDATE : FIND, [id]);
    return row ?? null;
  }

  async setRevoked(db: Queryable, id: string, revokedAt: Date, replacedById: string | null): Promise<ApiKeyRow> {
    const [row] = await db.query<ApiKeyRow>(SET_REVOKED, [id, revokedAt, replacedById]);
    return row;
  }

  async recordUsage(usage: ReadonlyMap<string, Date>): Promise<void> {
    await this.db.query(RECORD_USAGE, [[...usage.keys()], [...usage.values()].map((at) => at.toISOString())]);
  }
}

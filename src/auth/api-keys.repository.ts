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
  /** created_at in microseconds since the epoch: the position of a keyset cursor. */
  position: string;
}

const COLUMNS = `id, source, name, prefix, last4, created_at AS "createdAt", expires_at AS "expiresAt", revoked_at AS "revokedAt",
  last_used_at AS "lastUsedAt", replaced_by_id AS "replacedById", (extract(epoch FROM created_at) * 1000000)::bigint::text AS position`;

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

/** Newest first, of one source or all ($1); $2/$3 the cursor (before this key); $4 rows. */
const PAGE = sql(
  'api-key-page',
  `SELECT ${COLUMNS} FROM api_keys
    WHERE ($1::varchar IS NULL OR source = $1) AND ($2::bigint IS NULL OR (created_at, id) < (to_timestamp($2::bigint / 1000000.0), $3::uuid))
    ORDER BY created_at DESC, id DESC LIMIT $4`,
);

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

  page(source: string | undefined, before: { position: string; id: string } | null, limit: number): Promise<ApiKeyRow[]> {
    return this.db.query<ApiKeyRow>(PAGE, [source ?? null, before?.position ?? null, before?.id ?? null, limit]);
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

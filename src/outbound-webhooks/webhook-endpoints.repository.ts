import { Injectable } from '@nestjs/common';
import { Database, Queryable, Transaction } from '../database/database';
import { sql } from '../database/sql';
import type { DisabledReason, OutboundEventType } from './webhook-endpoint.entity';

export interface EndpointRow {
  id: string;
  source: string;
  url: string;
  description: string | null;
  eventTypes: OutboundEventType[];
  enabled: boolean;
  disabledReason: DisabledReason | null;
  createdAt: Date;
  updatedAt: Date;
  /** created_at in microseconds since the epoch: the position of a keyset cursor. */
  position: string;
}

const COLUMNS = `id, source, url, description, event_types AS "eventTypes", enabled, disabled_reason AS "disabledReason",
  created_at AS "createdAt", updated_at AS "updatedAt", (extract(epoch FROM created_at) * 1000000)::bigint::text AS position`;

/**
 * The per-source endpoints lock (pg_advisory_xact_lock(namespace, hashtext(source))), which the feed's
 * trigger also takes, shared, before it enqueues deliveries (migration OutboundEndpointLockNotForeignKey).
 * Held exclusively, it counts a source's endpoints against the limit and deletes one with its deliveries.
 */
export const ENDPOINTS_LOCK_NAMESPACE = 7_340_216;
const LOCK_SOURCE = sql('webhook-endpoint-lock-source', `SELECT pg_advisory_xact_lock(${ENDPOINTS_LOCK_NAMESPACE}, hashtext($1))`);

const COUNT = sql('webhook-endpoint-count', 'SELECT count(*)::int AS n FROM webhook_endpoints WHERE source = $1');

const INSERT = sql(
  'webhook-endpoint-insert',
  `INSERT INTO webhook_endpoints (source, url, description, event_types, secret) VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}, secret`,
);

const LIST = sql('webhook-endpoint-list', `SELECT ${COLUMNS} FROM webhook_endpoints WHERE source = $1 ORDER BY created_at, id`);

const FIND = sql('webhook-endpoint-find', `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = $1 AND source = $2`);

/**
 * $3 url, $5 event types: null keeps each; $4 description, kept unless $7; $6 enabled: null keeps it,
 * false records $8 as the reason. Answers whether it was disabled before (`old`: the row as it was). Nothing
 * is changed (and nothing returned) when $6 would switch an endpoint an administrator disabled.
 */
const UPDATE = sql(
  'webhook-endpoint-update',
  `UPDATE webhook_endpoints w SET
     url = COALESCE($3, w.url),
     description = CASE WHEN $7 THEN $4 ELSE w.description END,
     event_types = COALESCE($5, w.event_types),
     enabled = COALESCE($6, w.enabled),
     disabled_reason = CASE WHEN $6 IS NULL THEN w.disabled_reason WHEN $6 THEN NULL ELSE $8 END,
     -- A fresh start: the five days of failures that may have disabled it count from now again.
     failing_since = CASE WHEN $6 THEN NULL ELSE w.failing_since END,
     updated_at = now()
    FROM webhook_endpoints old
   WHERE w.id = $1 AND w.source = $2 AND old.id = w.id AND ($6::boolean IS NULL OR old.disabled_reason IS DISTINCT FROM 'admin')
   RETURNING w.id, w.source, w.url, w.description, w.event_types AS "eventTypes", w.enabled, w.disabled_reason AS "disabledReason",
             w.created_at AS "createdAt", w.updated_at AS "updatedAt", (extract(epoch FROM w.created_at) * 1000000)::bigint::text AS position,
             NOT old.enabled AS "wasDisabled"`,
);

const DELETE = sql('webhook-endpoint-delete', 'DELETE FROM webhook_endpoints WHERE id = $1 AND source = $2 RETURNING id');
const DELETE_DELIVERIES = sql('webhook-endpoint-delete-deliveries', 'DELETE FROM outbound_deliveries WHERE endpoint_id = $1');

const ROTATE_SECRET = sql(
  'webhook-endpoint-rotate-secret',
  `UPDATE webhook_endpoints
      SET previous_secret = secret, secret = $3, previous_secret_expires_at = now() + make_interval(secs => $4), updated_at = now()
    WHERE id = $1 AND source = $2
   RETURNING ${COLUMNS}, secret`,
);

/** Every source's endpoints or one's ($1), newest first; $2/$3 the cursor; $4 rows. */
const ADMIN_PAGE = sql(
  'webhook-endpoint-admin-page',
  `SELECT ${COLUMNS} FROM webhook_endpoints
    WHERE ($1::varchar IS NULL OR source = $1) AND ($2::bigint IS NULL OR (created_at, id) < (to_timestamp($2::bigint / 1000000.0), $3::uuid))
    ORDER BY created_at DESC, id DESC LIMIT $4`,
);

/** An administrator switches an endpoint off (disabledReason "admin") or on again (a fresh start, as by PATCH). */
const SET_ENABLED = sql(
  'webhook-endpoint-set-enabled',
  `UPDATE webhook_endpoints w SET enabled = $2,
          disabled_reason = CASE WHEN $2 THEN NULL ELSE 'admin' END,
          failing_since = CASE WHEN $2 THEN NULL ELSE w.failing_since END,
          updated_at = now()
     FROM webhook_endpoints old
    WHERE w.id = $1 AND old.id = w.id
   RETURNING w.id, w.source, w.url, w.description, w.event_types AS "eventTypes", w.enabled, w.disabled_reason AS "disabledReason",
             w.created_at AS "createdAt", w.updated_at AS "updatedAt", (extract(epoch FROM w.created_at) * 1000000)::bigint::text AS position,
             NOT old.enabled AS "wasDisabled"`,
);

const FIND_BY_ID = sql('webhook-endpoint-find-by-id', `SELECT ${COLUMNS} FROM webhook_endpoints WHERE id = $1`);

/** Every query of the webhook_endpoints table. */
@Injectable()
export class WebhookEndpointsRepository {
  constructor(private readonly db: Database) {}

  async lockSource(tx: Transaction, source: string): Promise<void> {
    await tx.query(LOCK_SOURCE, [source]);
  }

  async count(tx: Transaction, source: string): Promise<number> {
    const [{ n }] = await tx.query<{ n: number }>(COUNT, [source]);
    return n;
  }

  async insert(tx: Transaction, endpoint: { source: string; url: string; description: string | null; eventTypes: OutboundEventType[]; secret: string }): Promise<EndpointRow & { secret: string }> {
    const [row] = await tx.query<EndpointRow & { secret: string }>(INSERT, [endpoint.source, endpoint.url, endpoint.description, endpoint.eventTypes, endpoint.secret]);
    return row;
  }

  list(source: string): Promise<EndpointRow[]> {
    return this.db.query<EndpointRow>(LIST, [source]);
  }

  async find(db: Queryable, source: string, id: string): Promise<EndpointRow | null> {
    const [row] = await db.query<EndpointRow>(FIND, [id, source]);
    return row ?? null;
  }

  async findById(db: Queryable, id: string): Promise<EndpointRow | null> {
    const [row] = await db.query<EndpointRow>(FIND_BY_ID, [id]);
    return row ?? null;
  }

  /** Undefined fields stay as they are; `enabled: false` records `disabledReason`. Null when there is no such endpoint. */
  async update(
    source: string,
    id: string,
    change: { url?: string; description?: string | null; eventTypes?: OutboundEventType[]; enabled?: boolean; disabledReason: DisabledReason },
  ): Promise<(EndpointRow & { wasDisabled: boolean }) | null> {
    const [row] = await this.db.query<EndpointRow & { wasDisabled: boolean }>(UPDATE, [
      id,
      source,
      change.url ?? null,
      change.description ?? null,
      change.eventTypes ?? null,
      change.enabled ?? null,
      change.description !== undefined,
      change.disabledReason,
    ]);
    return row ?? null;
  }

  /** Deletes the endpoint and its deliveries, under the source's lock; false when there was none. */
  async delete(source: string, id: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      await tx.query(LOCK_SOURCE, [source]);
      const [deleted] = await tx.query(DELETE, [id, source]);
      if (!deleted) return false;
      await tx.query(DELETE_DELIVERIES, [id]);
      return true;
    });
  }

  async rotateSecret(tx: Transaction, source: string, id: string, secret: string, graceSeconds: number): Promise<(EndpointRow & { secret: string }) | null> {
    const [row] = await tx.query<EndpointRow & { secret: string }>(ROTATE_SECRET, [id, source, secret, graceSeconds]);
    return row ?? null;
  }

  pageForAdmin(source: string | undefined, before: { position: string; id: string } | null, limit: number): Promise<EndpointRow[]> {
    return this.db.query<EndpointRow>(ADMIN_PAGE, [source ?? null, before?.position ?? null, before?.id ?? null, limit]);
  }

  async setEnabled(tx: Transaction, id: string, enabled: boolean): Promise<(EndpointRow & { wasDisabled: boolean }) | null> {
    const [row] = await tx.query<EndpointRow & { wasDisabled: boolean }>(SET_ENABLED, [id, enabled]);
    return row ?? null;
  }
}

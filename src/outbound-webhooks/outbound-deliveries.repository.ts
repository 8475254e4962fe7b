import { Injectable } from '@nestjs/common';
import { Database, Queryable, Transaction } from '../database/database';
import { PurgeBatch, PurgeRange } from '../database/purge-batch';
import { sql } from '../database/sql';
import type { DeliveryStatus } from './outbound-delivery.entity';

export interface DeliveryRow {
  id: string;
  source: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  lastAttemptAt: Date | null;
  lastResponseStatus: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
}

const COLUMNS = `d.id, d.source, d.endpoint_id AS "endpointId", d.event_id AS "eventId", d.event_type AS "eventType", d.status, d.attempts,
  d.last_attempt_at AS "lastAttemptAt", d.last_response_status AS "lastResponseStatus", d.last_error AS "lastError",
  d.next_attempt_at AS "nextAttemptAt"`;

/** An endpoint's delivery log, newest first: $2 status or null, $3 before this id or null. */
const PAGE = sql(
  'outbound-delivery-page',
  `SELECT ${COLUMNS} FROM outbound_deliveries d
    WHERE d.endpoint_id = $1 AND ($2::varchar IS NULL OR d.status = $2) AND ($3::bigint IS NULL OR d.id < $3)
    ORDER BY d.id DESC LIMIT $4`,
);

/**
 * Every source's deliveries, newest first, with the URL each goes to: $1 source, $2 status, $3 needing
 * attention (failed, or still pending after a failed attempt), $4 only of these events, $5 before this id;
 * $6 rows.
 */
const ADMIN_PAGE = sql(
  'outbound-delivery-admin-page',
  `SELECT ${COLUMNS}, w.url AS "endpointUrl"
     FROM outbound_deliveries d
     JOIN webhook_endpoints w ON w.id = d.endpoint_id
    WHERE ($1::varchar IS NULL OR d.source = $1) AND ($2::varchar IS NULL OR d.status = $2)
      AND (NOT $3 OR d.status = 'failed' OR (d.status = 'pending' AND d.attempts > 0))
      AND ($4::bigint[] IS NULL OR d.event_id = ANY($4)) AND ($5::bigint IS NULL OR d.id < $5)
    ORDER BY d.id DESC LIMIT $6`,
);

/**
 * Push attempts of the last $1 hours in buckets of $2 minutes, by outcome: succeeded (a 2xx) or failed
 * (anything else). A bucket without attempts has no row.
 */
const ATTEMPTS_PER_BUCKET = sql(
  'outbound-delivery-attempts-per-bucket',
  `SELECT date_bin(make_interval(mins => $2), attempted_at, 'epoch') AS at,
          count(*) FILTER (WHERE error IS NULL AND response_status BETWEEN 200 AND 299)::int AS succeeded,
          count(*) FILTER (WHERE NOT (error IS NULL AND response_status BETWEEN 200 AND 299))::int AS failed
     FROM outbound_delivery_attempts
    WHERE attempted_at > now() - make_interval(hours => $1)
    GROUP BY 1 ORDER BY 1`,
);

const FIND = sql('outbound-delivery-find', `SELECT ${COLUMNS} FROM outbound_deliveries d WHERE d.id = $1 AND ($2::uuid IS NULL OR d.endpoint_id = $2)`);

/** Due again at once, from the start of the retry schedule; not a delivery that has succeeded. */
const RESTART = sql(
  'outbound-delivery-restart',
  `UPDATE outbound_deliveries d SET status = 'pending', retry_step = 0, next_attempt_at = now()
    WHERE d.id = $1 AND d.status <> 'succeeded' RETURNING ${COLUMNS}`,
);

/**
 * Retention: of the $3 deliveries after id $1, the finished ones (succeeded or failed) whose last attempt
 * was before now() - $2 (an ISO 8601 duration), with their attempts (ON DELETE CASCADE). A pending one is
 * never taken, and the conditions are on the deleted row itself, so one retried meanwhile (pending again)
 * is left. `more`: all $3 were created before the cut-off, so older finished ones may follow.
 */
const PURGE = sql(
  'outbound-delivery-purge',
  `WITH head AS (
     SELECT id, created_at < now() - $2::interval AS old FROM outbound_deliveries WHERE id > $1::bigint ORDER BY id LIMIT $3),
   gone AS (
     DELETE FROM outbound_deliveries d USING head
      WHERE d.id = head.id AND head.old AND d.status IN ('succeeded', 'failed') AND COALESCE(d.last_attempt_at, d.created_at) < now() - $2::interval
     RETURNING 1)
   SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT max(id) FROM head)::text AS last,
          COALESCE((SELECT count(*) = $3 AND bool_and(old) FROM head), false) AS more`,
);

/** Push deliveries as the API and the console read them (the worker has its own: DeliveryClaimsRepository). */
@Injectable()
export class OutboundDeliveriesRepository {
  constructor(private readonly db: Database) {}

  page(endpointId: string, filter: { status?: DeliveryStatus; before?: string }, limit: number): Promise<DeliveryRow[]> {
    return this.db.query<DeliveryRow>(PAGE, [endpointId, filter.status ?? null, filter.before ?? null, limit]);
  }

  pageForAdmin(
    filter: { source?: string; status?: DeliveryStatus; attention?: boolean; eventIds?: string[]; before?: string },
    limit: number,
  ): Promise<Array<DeliveryRow & { endpointUrl: string }>> {
    return this.db.query(ADMIN_PAGE, [filter.source ?? null, filter.status ?? null, filter.attention ?? false, filter.eventIds ?? null, filter.before ?? null, limit]);
  }

  attemptsPerBucket(hours: number, bucketMinutes: number): Promise<Array<{ at: Date; succeeded: number; failed: number }>> {
    return this.db.query(ATTEMPTS_PER_BUCKET, [hours, bucketMinutes]);
  }

  /** `endpointId`: only a delivery of that endpoint. */
  async find(db: Queryable, id: string, endpointId?: string): Promise<DeliveryRow | null> {
    const [row] = await db.query<DeliveryRow>(FIND, [id, endpointId ?? null]);
    return row ?? null;
  }

  /** Null when it has succeeded meanwhile. */
  async restart(db: Queryable, id: string): Promise<DeliveryRow | null> {
    const [row] = await db.query<DeliveryRow>(RESTART, [id]);
    return row ?? null;
  }

  async purge(tx: Transaction, range: PurgeRange): Promise<PurgeBatch> {
    const [batch] = await tx.query<PurgeBatch>(PURGE, [range.after, range.olderThan, range.limit]);
    return batch;
  }
}

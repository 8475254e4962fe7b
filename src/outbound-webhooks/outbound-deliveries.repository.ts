import { Injectable } from '@nestjs/common';
import { Database, Queryable } from '../database/database';
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

/** Every source's deliveries with the URL each goes to, newest first. */
const ADMIN_PAGE = sql(
  'outbound-delivery-admin-page',
  `SELECT ${COLUMNS}, w.url AS "endpointUrl" FROM outbound_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
    WHERE ($1::varchar IS NULL OR d.source = $1) AND ($2::varchar IS NULL OR d.status = $2)
    ORDER BY d.id DESC LIMIT $3`,
);

const FIND = sql('outbound-delivery-find', `SELECT ${COLUMNS} FROM outbound_deliveries d WHERE d.id = $1 AND ($2::uuid IS NULL OR d.endpoint_id = $2)`);

/** Due again at once, from the start of the retry schedule; not a delivery that has succeeded. */
const RESTART = sql(
  'outbound-delivery-restart',
  `UPDATE outbound_deliveries d SET status = 'pending', retry_step = 0, next_attempt_at = now()
    WHERE d.id = $1 AND d.status <> 'succeeded' RETURNING ${COLUMNS}`,
);

/** Push deliveries as the API and the console read them (the worker has its own: DeliveryClaimsRepository). */
@Injectable()
export class OutboundDeliveriesRepository {
  constructor(private readonly db: Database) {}

  page(endpointId: string, filter: { status?: DeliveryStatus; before?: string }, limit: number): Promise<DeliveryRow[]> {
    return this.db.query<DeliveryRow>(PAGE, [endpointId, filter.status ?? null, filter.before ?? null, limit]);
  }

  pageForAdmin(filter: { source?: string; status?: DeliveryStatus }, limit: number): Promise<Array<DeliveryRow & { endpointUrl: string }>> {
    return this.db.query(ADMIN_PAGE, [filter.source ?? null, filter.status ?? null, limit]);
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
}

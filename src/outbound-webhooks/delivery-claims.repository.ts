import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { PreparedStatement } from '../database/prepared-statement.js';
import { DocumentEventEntity } from '../documents/document-event.entity.js';
import type { OutboundDeliveryAttemptEntity } from './outbound-delivery-attempt.entity.js';
import { DeliveryStatus, OutboundDeliveryEntity } from './outbound-delivery.entity.js';
import { WebhookEndpointEntity } from './webhook-endpoint.entity.js';

/**
 * Leases up to $1 deliveries due for at least $7 seconds, oldest first, for $2 seconds, to instance $4: per
 * enabled endpoint at most its free slots here, $5 less what this instance runs or holds for it ($3
 * endpoints, $6 counts). An endpoint without a free slot is not read at all, however long its backlog
 * (one index probe per enabled endpoint otherwise). SKIP LOCKED passes over what a concurrent claim is
 * taking. One row per delivery, each with `held_back`: when $7 > 0, whether an endpoint with a free slot
 * has deliveries due but not yet for $7 seconds; a single row with a null id when none is leased.
 */
const CLAIM = new PreparedStatement(
  'outbound-claim',
  `WITH free AS (
     SELECT w.id, $5::int - COALESCE(busy.running, 0) AS slots
       FROM webhook_endpoints w
       LEFT JOIN unnest($3::uuid[], $6::int[]) AS busy(endpoint_id, running) ON busy.endpoint_id = w.id
      WHERE w.enabled AND COALESCE(busy.running, 0) < $5::int),
   due AS (
     SELECT c.id
       FROM free
       CROSS JOIN LATERAL (
         SELECT d.id, d.next_attempt_at FROM outbound_deliveries d
          WHERE d.endpoint_id = free.id AND d.status = 'pending' AND d.next_attempt_at <= now() - make_interval(secs => $7)
            AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now())
          ORDER BY d.next_attempt_at
          LIMIT free.slots
          FOR UPDATE OF d SKIP LOCKED) c
      ORDER BY c.next_attempt_at
      LIMIT $1),
   leased AS (
     UPDATE outbound_deliveries d
        SET lease_expires_at = now() + make_interval(secs => $2), leased_by = $4
       FROM due, webhook_endpoints w, document_events e
      WHERE d.id = due.id AND w.id = d.endpoint_id AND e.id = d.event_id
     RETURNING d.id, d.endpoint_id, d.retry_step, w.url, w.secret,
               CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END AS previous_secret,
               e.id AS event_id, e.source, e.type, e.document_id, e.status, e.previous_status, e.created_at, e.trace_parent),
   held AS (
     SELECT $7 > 0 AND EXISTS (
       SELECT 1 FROM free, outbound_deliveries d
        WHERE d.endpoint_id = free.id AND d.status = 'pending'
          AND d.next_attempt_at > now() - make_interval(secs => $7) AND d.next_attempt_at <= now()
          AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now())) AS held_back)
   SELECT leased.*, held.held_back FROM held LEFT JOIN leased ON true`,
);

const RELEASE = new PreparedStatement(
  'outbound-release',
  'UPDATE outbound_deliveries SET lease_expires_at = NULL, leased_by = NULL WHERE id = ANY ($1::bigint[]) AND leased_by = $2',
);

/** An endpoint that has failed every attempt for this long is disabled (`disabledReason: "failing"`). */
const FAILING_DISABLE_AFTER = '5 days';
/**
 * $1 delivery ids with, per attempt, $2 its outcome, $3 the delivery's new status, $4 seconds until the
 * next attempt, $5 when it was made, $6 the answer's status, $7 the error class, $8 its duration in ms
 * and $9 the answer's excerpt; $10 the instance that must still hold the lease.
 */
const RECORD = new PreparedStatement(
  'outbound-record',
  `WITH result AS (
     SELECT * FROM unnest($1::bigint[], $2::varchar[], $3::varchar[], $4::float8[], $5::timestamptz[], $6::smallint[], $7::varchar[], $8::integer[], $9::varchar[])
       AS r(id, outcome, status, delay, attempted_at, response_status, error, duration_ms, excerpt)),
   delivery AS (
     UPDATE outbound_deliveries d
        SET status = r.status, attempts = d.attempts + 1, retry_step = d.retry_step + CASE WHEN r.status = 'pending' THEN 1 ELSE 0 END,
            next_attempt_at = CASE WHEN r.delay IS NULL THEN NULL ELSE now() + make_interval(secs => r.delay) END,
            lease_expires_at = NULL, leased_by = NULL,
            last_attempt_at = r.attempted_at, last_response_status = r.response_status, last_error = r.error
       FROM result r
      WHERE d.id = r.id AND d.leased_by = $10
     RETURNING d.id, d.endpoint_id),
   attempt AS (
     INSERT INTO outbound_delivery_attempts (delivery_id, attempted_at, duration_ms, response_status, error, response_excerpt)
     SELECT r.id, r.attempted_at, r.duration_ms, r.response_status, r.error, r.excerpt FROM result r JOIN delivery USING (id)),
   outcome AS (SELECT delivery.endpoint_id, r.outcome, r.attempted_at FROM result r JOIN delivery USING (id)),
   -- Per endpoint, as if its attempts were recorded one by one: a 410 disables it; a success clears
   -- its failing streak, and the first failure after the last success (if any) starts a new one.
   health AS (
     SELECT endpoint_id, bool_or(outcome = 'gone') AS gone, max(attempted_at) FILTER (WHERE outcome = 'succeeded') AS last_success
       FROM outcome GROUP BY endpoint_id),
   streak AS (
     SELECT h.endpoint_id, h.gone, h.last_success IS NOT NULL AS cleared,
            (SELECT min(o.attempted_at) FROM outcome o
              WHERE o.endpoint_id = h.endpoint_id AND o.outcome IN ('retrying', 'failed')
                AND (h.last_success IS NULL OR o.attempted_at > h.last_success)) AS failing_from
       FROM health h),
   endpoint AS (
     SELECT s.*, NOT s.cleared AND s.failing_from IS NOT NULL AND COALESCE(w.failing_since < now() - interval '${FAILING_DISABLE_AFTER}', false) AS stale
       FROM streak s JOIN webhook_endpoints w ON w.id = s.endpoint_id)
   UPDATE webhook_endpoints w
      SET failing_since = CASE WHEN e.cleared THEN e.failing_from WHEN w.enabled THEN COALESCE(w.failing_since, e.failing_from) ELSE w.failing_since END,
          enabled = w.enabled AND NOT e.gone AND NOT e.stale,
          disabled_reason = CASE WHEN NOT w.enabled THEN w.disabled_reason WHEN e.gone THEN 'gone' WHEN e.stale THEN 'failing' ELSE w.disabled_reason END,
          updated_at = CASE WHEN w.enabled AND (e.gone OR e.stale) THEN now() ELSE w.updated_at END
     FROM endpoint e
    WHERE w.id = e.endpoint_id
      AND ((e.cleared AND w.failing_since IS DISTINCT FROM e.failing_from)
           OR (w.enabled AND (e.gone OR e.stale OR (e.failing_from IS NOT NULL AND w.failing_since IS NULL))))`,
);

/** Tells the other instances, listening on $1, that deliveries are due; the payload names the sender. */
const NOTIFY = new PreparedStatement('outbound-notify', 'SELECT pg_notify($1, $2)');

/** A delivery leased to this instance, with what its message needs: its endpoint's address and secrets, and the event. */
export type ClaimedDelivery = Pick<OutboundDeliveryEntity, 'id' | 'endpointId' | 'retryStep'> &
  Pick<WebhookEndpointEntity, 'url' | 'secret' | 'previousSecret'> & { event: Omit<DocumentEventEntity, 'bankEventId'> };

export interface ClaimRequest {
  limit: number;
  leaseSeconds: number;
  instance: string;
  /** Per endpoint, the most this instance may hold (running or waiting). */
  perEndpoint: number;
  /** Endpoints this instance already holds deliveries of, and how many. */
  held: ReadonlyMap<string, number>;
  /** Only deliveries due for at least this long (0: all due). */
  minAgeSeconds: number;
}

/** One finished attempt, as the recorder writes it: the attempt, and what it makes of its delivery. */
export type AttemptRecord = Pick<
  OutboundDeliveryAttemptEntity,
  'deliveryId' | 'attemptedAt' | 'durationMs' | 'responseStatus' | 'error' | 'responseExcerpt'
> & {
  outcome: string;
  /** The delivery's status after it: pending (a retry is scheduled), succeeded or failed. */
  status: DeliveryStatus;
  delaySeconds: number | null;
};

/**
 * The delivery worker's queries: leases on due deliveries, their release, the attempts' outcomes. Each
 * runs once per batch of deliveries, not per request, but under push load that is often: prepared
 * statements, SQL by hand (SKIP LOCKED, LATERAL, unnest batches, NOTIFY); the queue's depth for the
 * metrics through a QueryBuilder.
 */
@Injectable()
export class DeliveryClaimsRepository {
  constructor(@InjectRepository(OutboundDeliveryEntity) private readonly deliveries: Repository<OutboundDeliveryEntity>) {}

  /** Leases due deliveries (see CLAIM); `heldBack`: whether some were due for less than `minAgeSeconds` and left. */
  async claim(request: ClaimRequest): Promise<{ claimed: ClaimedDelivery[]; heldBack: boolean }> {
    const rows = await CLAIM.run(this.deliveries.manager, [
      request.limit,
      request.leaseSeconds,
      [...request.held.keys()],
      request.instance,
      request.perEndpoint,
      [...request.held.values()],
      request.minAgeSeconds,
    ]);
    const claimed = rows
      .filter((row) => row.id !== null)
      .map((row): ClaimedDelivery => ({
        id: row.id as string,
        endpointId: row.endpoint_id as string,
        retryStep: row.retry_step as number,
        url: row.url as string,
        secret: row.secret as string,
        previousSecret: (row.previous_secret as string | null) ?? null,
        event: {
          id: String(row.event_id),
          source: row.source as string,
          documentId: row.document_id as string,
          type: row.type as DocumentEventEntity['type'],
          status: row.status as DocumentEventEntity['status'],
          previousStatus: row.previous_status as DocumentEventEntity['previousStatus'],
          createdAt: row.created_at as Date,
          traceParent: (row.trace_parent as string | null) ?? null,
        },
      }));
    return { claimed, heldBack: rows[0]?.held_back === true };
  }

  /** Gives up this instance's leases on `ids`, for another attempt at once (by any instance). */
  async release(ids: readonly string[], instance: string): Promise<void> {
    await RELEASE.run(this.deliveries.manager, [ids, instance]);
  }

  /** Records a batch of attempts, each only if `instance` still holds its lease (see RECORD). */
  async record(attempts: readonly AttemptRecord[], instance: string): Promise<void> {
    await RECORD.run(this.deliveries.manager, [
      attempts.map((a) => a.deliveryId),
      attempts.map((a) => a.outcome),
      attempts.map((a) => a.status),
      attempts.map((a) => a.delaySeconds),
      attempts.map((a) => a.attemptedAt),
      attempts.map((a) => a.responseStatus),
      attempts.map((a) => a.error),
      attempts.map((a) => a.durationMs),
      attempts.map((a) => a.responseExcerpt),
      instance,
    ]);
  }

  async notify(channel: string, instance: string): Promise<void> {
    await NOTIFY.run(this.deliveries.manager, [channel, instance]);
  }

  /** The shared queue, as every instance reports it: deliveries due now to enabled endpoints, and the oldest one's age. */
  async due(): Promise<{ depth: number; oldestSeconds: number }> {
    const row = await this.deliveries
      .createQueryBuilder('d')
      .innerJoin(WebhookEndpointEntity, 'w', 'w.id = d.endpointId AND w.enabled')
      .select('count(*)::int', 'depth')
      .addSelect('COALESCE(EXTRACT(EPOCH FROM now() - min(d.nextAttemptAt)), 0)::float8', 'oldestSeconds')
      .where("d.status = 'pending'")
      .andWhere('d.nextAttemptAt <= now()')
      .getRawOne<{ depth: number; oldestSeconds: number }>();
    return row!;
  }
}

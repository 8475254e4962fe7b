import { Logger } from '@nestjs/common';
import { Database, statement } from '../database/database';
import type { AttemptResult } from './delivery-sender';
import type { AttemptOutcome } from './outbound-metrics';

export interface RecordedAttempt {
  deliveryId: string;
  attemptedAt: Date;
  result: AttemptResult;
  outcome: AttemptOutcome;
  /** For `retrying`: seconds until the next attempt. */
  delaySeconds: number | null;
}

/** An endpoint that has failed every attempt for this long is disabled (`disabledReason: "failing"`). */
const FAILING_DISABLE_AFTER = '5 days';
/** A batch is written this long after its first attempt finished, or as soon as it holds FLUSH_SIZE. */
const FLUSH_DELAY_MS = 20;
const FLUSH_SIZE = 64;

/**
 * $1 delivery ids with, per attempt, $2 its outcome, $3 the delivery's new status, $4 seconds until the
 * next attempt, $5 when it was made, $6 the answer's status, $7 the error class, $8 its duration in ms
 * and $9 the answer's excerpt; $10 the instance that must still hold the lease.
 */
const RECORD = statement(
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

const DELIVERY_STATUS: Record<AttemptOutcome, string> = { succeeded: 'succeeded', retrying: 'pending', failed: 'failed', gone: 'failed' };

/**
 * Writes finished attempts in batches: one statement per batch records every attempt, the deliveries'
 * new states and their endpoints' health, instead of one per attempt. A delivery stays leased by this
 * instance until its batch is written, so no other instance attempts it meanwhile; a crash before the
 * write leaves it to be attempted again after the lease (at least once), like a crash during the attempt.
 */
export class DeliveryRecorder {
  private readonly logger = new Logger(DeliveryRecorder.name);
  private pending: RecordedAttempt[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Database,
    private readonly instance: string,
    private readonly onRecorded: (attempts: RecordedAttempt[]) => void,
  ) {}

  add(attempt: RecordedAttempt): void {
    this.pending.push(attempt);
    if (this.pending.length >= FLUSH_SIZE) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_DELAY_MS);
  }

  /** Writes what is buffered (after the batch being written, if any); resolves when all of it is written. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    if (batch.length > 0) this.writing = this.writing.then(() => this.write(batch));
    return this.writing;
  }

  private async write(batch: RecordedAttempt[]): Promise<void> {
    try {
      await this.db.query(RECORD, [
        batch.map((a) => a.deliveryId),
        batch.map((a) => a.outcome),
        batch.map((a) => DELIVERY_STATUS[a.outcome]),
        batch.map((a) => a.delaySeconds),
        batch.map((a) => a.attemptedAt),
        batch.map((a) => a.result.status),
        batch.map((a) => a.result.error),
        batch.map((a) => a.result.durationMs),
        batch.map((a) => a.result.excerpt),
        this.instance,
      ]);
    } catch (error) {
      this.logger.warn({ attempts: batch.length, code: (error as { code?: unknown }).code }, 'Recording push delivery attempts failed; they are retried after their lease');
      return;
    }
    this.onRecorded(batch);
  }
}

import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresConnectionOptions } from 'typeorm/driver/postgres/PostgresConnectionOptions';
import { AppConfig, parseRetrySchedule } from '../config/app-config';
import type { DocumentEventView } from '../documents/document-events.service';
import { AttemptResult, DeliverySender } from './delivery-sender';
import { AttemptOutcome, OutboundMetrics } from './outbound-metrics';
import { signedHeaders } from './signing';

export const DELIVERIES_CHANNEL = 'outbound_deliveries';

/** An endpoint that has failed every attempt for this long is disabled (`disabledReason: "failing"`). */
const FAILING_DISABLE_AFTER = '5 days';
/** How long a stopping instance lets running attempts finish before it aborts and releases them. */
const SHUTDOWN_GRACE_MS = 3000;

interface ClaimedDelivery {
  id: string;
  endpoint_id: string;
  retry_step: number;
  url: string;
  secrets: string[];
  event: DocumentEventView;
}

/**
 * The delivery engine of every instance. Due deliveries are claimed with FOR UPDATE SKIP LOCKED and a
 * lease, so instances never attempt the same delivery at once; a crashed instance's claims become due
 * again when their lease ends. Work is announced by the feed trigger's NOTIFY (on commit), heard on a
 * dedicated connection outside the request pool; a slow poll covers missed notifications, expired
 * leases and retries scheduled by other instances.
 */
@Injectable()
export class DeliveryWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(DeliveryWorker.name);
  private readonly instance = `${hostname().slice(0, 40)}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly schedule: number[];
  private readonly sender: DeliverySender;
  private readonly running = new Map<string, Promise<void>>();
  private readonly perEndpoint = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private listener: Client | null = null;
  private pumping = false;
  private pumped: Promise<void> = Promise.resolve();
  private wakeAgain = false;
  private stopping = false;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly config: AppConfig,
    private readonly metrics: OutboundMetrics,
  ) {
    this.schedule = parseRetrySchedule(config.OUTBOUND_WEBHOOKS_RETRY_SCHEDULE);
    this.sender = new DeliverySender({
      timeoutMs: config.OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS * 1000,
      connectionsPerEndpoint: config.OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY,
      allowPrivate: config.OUTBOUND_WEBHOOKS_ALLOW_PRIVATE,
    });
  }

  onApplicationBootstrap(): void {
    void this.listen();
    const poll = setInterval(() => this.wake(), this.config.OUTBOUND_WEBHOOKS_POLL_SECONDS * 1000);
    this.timers.add(poll);
    this.wake();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    for (const timer of this.timers) clearTimeout(timer);
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
    // A claim round in progress finishes first: what it claims after `stopping` is released at once.
    await this.pumped;
    const finished = Promise.allSettled([...this.running.values()]);
    await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref())]);
    // Attempts still running are aborted: they report `shutdown` and release their claims rather than
    // leaving them to the lease.
    await this.sender.close();
    await finished;
  }

  /** Starts a claim round now, or right after the one in progress. */
  wake(): void {
    if (this.stopping) return;
    if (this.pumping) {
      this.wakeAgain = true;
      return;
    }
    this.pumping = true;
    this.pumped = this.pump()
      .catch((error: unknown) => this.logger.warn({ code: (error as { code?: unknown }).code, error: (error as Error).name }, 'Claiming push deliveries failed; will retry'))
      .finally(() => {
        this.pumping = false;
        if (this.wakeAgain) {
          this.wakeAgain = false;
          this.wake();
        }
      });
  }

  private async pump(): Promise<void> {
    const perEndpointLimit = this.config.OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY;
    for (;;) {
      const free = this.config.OUTBOUND_WEBHOOKS_CONCURRENCY - this.running.size;
      if (this.stopping || free <= 0) return;
      const full = [...this.perEndpoint].filter(([, count]) => count >= perEndpointLimit).map(([id]) => id);
      const claimed = await this.claim(Math.min(free, perEndpointLimit), full);
      const excess: string[] = [];
      for (const delivery of claimed) {
        if ((this.perEndpoint.get(delivery.endpoint_id) ?? 0) >= perEndpointLimit || this.stopping) excess.push(delivery.id);
        else this.start(delivery);
      }
      if (excess.length > 0) await this.release(excess);
      if (claimed.length === 0 || excess.length === claimed.length) return;
    }
  }

  private async claim(limit: number, fullEndpoints: string[]): Promise<ClaimedDelivery[]> {
    // An UPDATE answers [rows, count] through TypeORM.
    const [rows]: [Array<Omit<ClaimedDelivery, 'secrets' | 'event'> & Record<string, unknown>>] = await this.dataSource.query(
      `WITH due AS (
         SELECT d.id FROM outbound_deliveries d
          WHERE d.status = 'pending' AND d.next_attempt_at <= now()
            AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now())
            AND NOT (d.endpoint_id = ANY ($3::uuid[]))
            AND EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.id = d.endpoint_id AND w.enabled)
          ORDER BY d.next_attempt_at
          LIMIT $1
          FOR UPDATE OF d SKIP LOCKED)
       UPDATE outbound_deliveries d
          SET lease_expires_at = now() + make_interval(secs => $2), leased_by = $4
         FROM due, webhook_endpoints w, document_events e
        WHERE d.id = due.id AND w.id = d.endpoint_id AND e.id = d.event_id
       RETURNING d.id, d.endpoint_id, d.retry_step, w.url, w.secret,
                 CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret END AS previous_secret,
                 e.id AS event_id, e.type, e.document_id, e.status, e.previous_status, e.created_at`,
      [limit, this.config.OUTBOUND_WEBHOOKS_LEASE_SECONDS, fullEndpoints, this.instance],
    );
    return rows.map((row) => ({
      id: row.id,
      endpoint_id: row.endpoint_id,
      retry_step: row.retry_step,
      url: row.url,
      secrets: [row.secret as string, ...(row.previous_secret ? [row.previous_secret as string] : [])],
      // Exactly the feed's view of the event (GET /api/v1/events), so `data` and the feed agree.
      event: {
        id: String(row.event_id),
        type: row.type as DocumentEventView['type'],
        documentId: row.document_id as string,
        status: row.status as DocumentEventView['status'],
        previousStatus: row.previous_status as DocumentEventView['previousStatus'],
        createdAt: (row.created_at as Date).toISOString(),
      },
    }));
  }

  private start(delivery: ClaimedDelivery): void {
    this.perEndpoint.set(delivery.endpoint_id, (this.perEndpoint.get(delivery.endpoint_id) ?? 0) + 1);
    const run = this.attempt(delivery)
      .catch((error: unknown) =>
        this.logger.warn({ deliveryId: delivery.id, code: (error as { code?: unknown }).code }, 'Recording a push delivery attempt failed; it is retried after its lease'),
      )
      .finally(() => {
        this.running.delete(delivery.id);
        const left = (this.perEndpoint.get(delivery.endpoint_id) ?? 1) - 1;
        if (left > 0) this.perEndpoint.set(delivery.endpoint_id, left);
        else this.perEndpoint.delete(delivery.endpoint_id);
        this.wake();
      });
    this.running.set(delivery.id, run);
  }

  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const { event } = delivery;
    const body = JSON.stringify({ type: event.type, timestamp: event.createdAt, data: event });
    const attemptedAt = new Date();
    const headers = signedHeaders(delivery.secrets, event.id, Math.floor(attemptedAt.getTime() / 1000), body);
    const result = await this.sender.send(delivery.url, headers, body);
    if (result.error === 'shutdown') return this.release([delivery.id]);
    const outcome = this.outcomeOf(delivery, result);
    await this.record(delivery, attemptedAt, result, outcome);
    this.metrics.attempted(outcome, result.durationMs / 1000);
  }

  private outcomeOf(delivery: ClaimedDelivery, result: AttemptResult): AttemptOutcome {
    if (result.ok) return 'succeeded';
    if (result.status === 410) return 'gone';
    return delivery.retry_step < this.schedule.length ? 'retrying' : 'failed';
  }

  /** The attempt, the delivery's new state and the endpoint's health, in one statement. */
  private async record(delivery: ClaimedDelivery, attemptedAt: Date, result: AttemptResult, outcome: AttemptOutcome): Promise<void> {
    const delaySeconds = outcome === 'retrying' ? this.retryDelay(delivery.retry_step, result.retryAfterSeconds) : null;
    const status = outcome === 'succeeded' ? 'succeeded' : outcome === 'retrying' ? 'pending' : 'failed';
    const stale = `w.failing_since < now() - interval '${FAILING_DISABLE_AFTER}'`;
    const failing = `failing_since = COALESCE(w.failing_since, now()), enabled = NOT COALESCE(${stale}, false),
      disabled_reason = CASE WHEN ${stale} THEN 'failing' END, updated_at = CASE WHEN ${stale} THEN now() ELSE w.updated_at END`;
    const endpointUpdate = {
      succeeded: `failing_since = NULL`,
      gone: `enabled = false, disabled_reason = 'gone', updated_at = now()`,
      retrying: failing,
      failed: failing,
    };
    await this.dataSource.query(
      `WITH delivery AS (
         UPDATE outbound_deliveries
            SET status = $2::varchar, attempts = attempts + 1, retry_step = retry_step + CASE WHEN $2::varchar = 'pending' THEN 1 ELSE 0 END,
                next_attempt_at = CASE WHEN $3::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $3::float8) END,
                lease_expires_at = NULL, leased_by = NULL,
                last_attempt_at = $4::timestamptz, last_response_status = $5::smallint, last_error = $6::varchar
          WHERE id = $1 AND leased_by = $8
          RETURNING id, endpoint_id),
       attempt AS (
         INSERT INTO outbound_delivery_attempts (delivery_id, attempted_at, duration_ms, response_status, error, response_excerpt)
         SELECT id, $4::timestamptz, $7::integer, $5::smallint, $6::varchar, $9::varchar FROM delivery)
       UPDATE webhook_endpoints w SET ${endpointUpdate[outcome]}
         FROM delivery WHERE w.id = delivery.endpoint_id AND ${outcome === 'succeeded' ? 'w.failing_since IS NOT NULL' : 'w.enabled'}`,
      [delivery.id, status, delaySeconds, attemptedAt, result.status, result.error, result.durationMs, this.instance, result.excerpt],
    );
    if (delaySeconds !== null && delaySeconds < this.config.OUTBOUND_WEBHOOKS_POLL_SECONDS) this.wakeIn(delaySeconds);
  }

  /** The schedule's delay ±10 % (so retries of many deliveries spread out), never sooner than Retry-After. */
  private retryDelay(step: number, retryAfter: number | null): number {
    const jittered = this.schedule[step] * (0.9 + Math.random() * 0.2);
    return Math.max(jittered, retryAfter ?? 0);
  }

  private wakeIn(seconds: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.wake();
    }, seconds * 1000 + 50);
    this.timers.add(timer);
  }

  private async release(ids: string[]): Promise<void> {
    await this.dataSource.query(
      `UPDATE outbound_deliveries SET lease_expires_at = NULL, leased_by = NULL WHERE id = ANY ($1::bigint[]) AND leased_by = $2`,
      [ids, this.instance],
    );
  }

  /** LISTEN on a connection of its own; reconnects (and looks for missed work) when it drops. */
  private async listen(): Promise<void> {
    if (this.stopping) return;
    const client = new Client({
      connectionString: (this.dataSource.options as PostgresConnectionOptions).url,
      application_name: 'tax-document-gateway-listener',
    });
    const reconnect = () => {
      if (this.listener !== client) return;
      this.listener = null;
      client.end().catch(() => undefined);
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        void this.listen();
      }, 2000);
      this.timers.add(timer);
    };
    client.on('error', reconnect);
    client.on('end', reconnect);
    client.on('notification', () => this.wake());
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${DELIVERIES_CHANNEL}`);
      this.wake();
    } catch (error) {
      this.logger.warn({ code: (error as { code?: unknown }).code }, 'Push delivery listener could not connect; polling until it can');
      reconnect();
    }
  }
}

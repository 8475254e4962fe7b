import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresConnectionOptions } from 'typeorm/driver/postgres/PostgresConnectionOptions';
import { AppConfig, parseRetrySchedule } from '../config/app-config';
import { Database, statement } from '../database/database';
import type { DocumentEventView } from '../documents/document-events.service';
import { DeliveryRecorder, RecordedAttempt } from './delivery-recorder';
import { AttemptResult, DeliverySender } from './delivery-sender';
import { EventLoopLoad } from './event-loop-load';
import { AttemptOutcome, OutboundMetrics } from './outbound-metrics';
import { signedHeaders } from './signing';

const DELIVERIES_CHANNEL = 'outbound_deliveries';
/** Set (transaction-locally) by the feed trigger when it enqueued deliveries: see OutboundWakeAfterCommit. */
const ENQUEUED_FLAG = 'outbound.enqueued';

/** The shortest time between two claim rounds while work keeps arriving (an idle instance claims at once). */
const CLAIM_INTERVAL_MS = 25;
/**
 * While this instance's event loop is saturated, a delivery waits until it has been due this long: the
 * requests of a burst are answered first and the deliveries they caused follow it, or go at once to an
 * instance with time to spare (every instance hears of them by NOTIFY). Under load that does not end, a
 * first attempt still starts within about a second of its commit, unless its endpoint's slots are the limit.
 */
const BUSY_DEFERRAL_SECONDS = 0.75;
/** While deliveries are held back, how often the instance looks again (for those old enough, or for time to spare). */
const BUSY_RECHECK_MS = 100;
/** At most this many attempts' worth of deliveries per endpoint slot are claimed ahead (see the constructor). */
const MAX_PREFETCH_ROUNDS = 3;
/** How long a stopping instance lets running attempts finish before it aborts and releases them. */
const SHUTDOWN_GRACE_MS = 3000;

/**
 * Leases up to $1 deliveries due for at least $7 seconds, oldest first, for $2 seconds, to instance $4: per
 * enabled endpoint at most its free slots here, $5 less what this instance runs or holds for it ($3
 * endpoints, $6 counts). An endpoint without a free slot is not read at all, however long its backlog
 * (one index probe per enabled endpoint otherwise). SKIP LOCKED passes over what a concurrent claim is
 * taking. One row per delivery, each with `held_back`: when $7 > 0, whether an endpoint with a free slot
 * has deliveries due but not yet for $7 seconds; a single row with a null id when none is leased.
 */
const CLAIM = statement(
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
               e.id AS event_id, e.type, e.document_id, e.status, e.previous_status, e.created_at),
   held AS (
     SELECT $7 > 0 AND EXISTS (
       SELECT 1 FROM free, outbound_deliveries d
        WHERE d.endpoint_id = free.id AND d.status = 'pending'
          AND d.next_attempt_at > now() - make_interval(secs => $7) AND d.next_attempt_at <= now()
          AND (d.lease_expires_at IS NULL OR d.lease_expires_at < now())) AS held_back)
   SELECT leased.*, held.held_back FROM held LEFT JOIN leased ON true`,
);

const RELEASE = statement(
  'outbound-release',
  'UPDATE outbound_deliveries SET lease_expires_at = NULL, leased_by = NULL WHERE id = ANY ($1::bigint[]) AND leased_by = $2',
);

const NOTIFY = statement('outbound-notify', 'SELECT pg_notify($1, $2)');

type ClaimedRow = Omit<ClaimedDelivery, 'secrets' | 'event' | 'claimedAt'> & Record<string, unknown>;

interface ClaimedDelivery {
  id: string;
  endpoint_id: string;
  retry_step: number;
  url: string;
  secrets: string[];
  event: DocumentEventView;
  /** performance.now() when the lease was taken. */
  claimedAt: number;
}

/**
 * The delivery engine of every instance. Due deliveries are claimed with FOR UPDATE SKIP LOCKED and a
 * lease, so instances never attempt the same delivery at once; a crashed instance's claims become due
 * again when their lease ends. Work is announced after each commit that enqueued deliveries (a
 * NOTIFY), heard on a dedicated connection outside the request pool; a slow poll covers missed
 * notifications, expired leases and retries scheduled by other instances.
 */
@Injectable()
export class DeliveryWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(DeliveryWorker.name);
  private readonly instance = `${hostname().slice(0, 40)}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly schedule: number[];
  private readonly sender: DeliverySender;
  private readonly recorder: DeliveryRecorder;
  private readonly running = new Map<string, Promise<void>>();
  /** Per endpoint: attempts in flight here. */
  private readonly perEndpoint = new Map<string, number>();
  /** Per endpoint: claimed deliveries waiting for one of its slots (the prefetch). */
  private readonly queued = new Map<string, ClaimedDelivery[]>();
  private queuedCount = 0;
  /** How many deliveries beyond its slots an endpoint may have claimed here (see the constructor). */
  private readonly prefetch: number;
  private readonly timers = new Set<NodeJS.Timeout>();
  private listener: Client | null = null;
  private pumping = false;
  private pumpTimer: NodeJS.Timeout | null = null;
  /** performance.now() before which no claim round starts unless an endpoint needs one (see wake). */
  private nextClaimAt = -Infinity;
  /** Endpoints whose last claim took all it was allowed: they may have more due (see launchQueued). */
  private readonly backlogged = new Set<string>();
  private pumped: Promise<void> = Promise.resolve();
  /** A wake-up that came during a claim round: another round after it, at once or after the interval. */
  private wakeAgain: 'now' | 'soon' | null = null;
  private stopping = false;
  /** Set while a NOTIFY waits to tell the other instances of the commits since the first of them. */
  private notifyTimer: NodeJS.Timeout | null = null;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly db: Database,
    private readonly config: AppConfig,
    private readonly metrics: OutboundMetrics,
    private readonly load: EventLoopLoad,
  ) {
    this.schedule = parseRetrySchedule(config.OUTBOUND_WEBHOOKS_RETRY_SCHEDULE);
    this.sender = new DeliverySender({
      timeoutMs: config.OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS * 1000,
      connectionsPerEndpoint: config.OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY,
      allowPrivate: config.OUTBOUND_WEBHOOKS_ALLOW_PRIVATE,
    });
    // A claimed delivery waiting for a slot must still start and finish within its lease: with `rounds`
    // deliveries per slot claimed ahead, it waits for at most that many attempts, then takes one more.
    const attemptSeconds = config.OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS;
    const rounds = Math.min(MAX_PREFETCH_ROUNDS, Math.floor((config.OUTBOUND_WEBHOOKS_LEASE_SECONDS - 5) / attemptSeconds) - 1);
    this.prefetch = Math.max(0, rounds) * config.OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY;
    this.recorder = new DeliveryRecorder(db, this.instance, (attempts) => this.recorded(attempts));
    db.onCommitFlag(ENQUEUED_FLAG, () => this.announce());
  }

  /**
   * New deliveries are due (their transaction has committed): this instance claims them at once, and
   * one NOTIFY, sent outside any request's transaction, wakes the others to share the work.
   */
  announce(): void {
    this.wake();
    if (this.stopping || this.notifyTimer) return;
    // One NOTIFY for the commits of the next CLAIM_INTERVAL_MS: the others claim no more often than that.
    this.notifyTimer = setTimeout(() => {
      this.notifyTimer = null;
      // The payload names this instance, whose worker is awake already.
      this.db
        .query(NOTIFY, [DELIVERIES_CHANNEL, this.instance])
        .catch((error: unknown) => this.logger.warn({ code: (error as { code?: unknown }).code }, 'Telling other instances of new push deliveries failed; they find them by polling'));
    }, CLAIM_INTERVAL_MS);
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
    if (this.pumpTimer) clearTimeout(this.pumpTimer);
    if (this.notifyTimer) clearTimeout(this.notifyTimer);
    const listener = this.listener;
    this.listener = null;
    await listener?.end().catch(() => undefined);
    // A claim round in progress finishes first: what it claims after `stopping` is released at once,
    // and so is what waits for a slot.
    await this.pumped;
    const waiting = [...this.queued.values()].flat().map((delivery) => delivery.id);
    this.queued.clear();
    this.queuedCount = 0;
    if (waiting.length > 0) await this.release(waiting).catch(() => undefined);
    const finished = Promise.allSettled([...this.running.values()]);
    await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref())]);
    // Attempts still running are aborted: they report `shutdown` and release their claims rather than
    // leaving them to the lease.
    await this.sender.close();
    await finished;
    await this.recorder.flush();
  }

  /**
   * Starts a claim round now, or at `nextClaimAt` if that is later, or right after the one in progress:
   * an idle instance answers a NOTIFY at once, a busy one claims each batch in one statement rather than
   * a statement per commit it hears about. `now`: at once whatever the interval, for an endpoint that has
   * run out of deliveries claimed ahead and may have more due.
   */
  wake(now = false): void {
    if (this.stopping) return;
    if (this.pumping) {
      if (this.wakeAgain !== 'now') this.wakeAgain = now ? 'now' : 'soon';
      return;
    }
    if (this.pumpTimer) {
      if (!now) return;
      clearTimeout(this.pumpTimer);
      this.pumpTimer = null;
    }
    const wait = now ? 0 : this.nextClaimAt - performance.now();
    if (wait > 0) {
      this.pumpTimer = setTimeout(() => {
        this.pumpTimer = null;
        this.startPump();
      }, wait);
      return;
    }
    this.startPump();
  }

  private startPump(): void {
    if (this.stopping) return;
    this.pumping = true;
    this.wakeAgain = null;
    this.pumped = this.pump()
      .catch((error: unknown) => this.logger.warn({ code: (error as { code?: unknown }).code, error: (error as Error).name }, 'Claiming push deliveries failed; will retry'))
      .finally(() => {
        this.pumping = false;
        const again = this.wakeAgain;
        this.wakeAgain = null;
        if (again) this.wake(again === 'now');
      });
  }

  private async pump(): Promise<void> {
    for (;;) {
      const free = this.config.OUTBOUND_WEBHOOKS_CONCURRENCY + this.prefetch - this.running.size - this.queuedCount;
      if (this.stopping || free <= 0) return;
      const startedAt = performance.now();
      const saturated = this.load.busy();
      const { claimed, heldBack } = await this.claim(free, saturated ? BUSY_DEFERRAL_SECONDS : 0);
      // Only a round that found work delays the next one, by CLAIM_INTERVAL_MS: an idle instance keeps
      // answering at once. One that held deliveries back comes again after BUSY_RECHECK_MS, even if
      // nothing wakes it meanwhile.
      if (saturated) {
        this.nextClaimAt = startedAt + BUSY_RECHECK_MS;
        if (heldBack) this.wakeAgain ??= 'soon';
      } else if (claimed.length > 0) {
        this.nextClaimAt = startedAt + CLAIM_INTERVAL_MS;
      }
      if (this.stopping) {
        if (claimed.length > 0) await this.release(claimed.map((delivery) => delivery.id));
        return;
      }
      for (const delivery of claimed) this.start(delivery);
      // A full batch means more may be due: claim again at once rather than after the interval.
      if (claimed.length < free) return;
    }
  }

  /**
   * Leases up to `limit` deliveries due for at least `minAgeSeconds` in one statement, at most as many per
   * endpoint as it has free slots here (OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY plus the prefetch, less what
   * it has claimed), so what is claimed starts well within its lease. `heldBack`: whether deliveries due
   * for less than `minAgeSeconds` were left.
   */
  private async claim(limit: number, minAgeSeconds: number): Promise<{ claimed: ClaimedDelivery[]; heldBack: boolean }> {
    const busy = [...this.perEndpoint.keys(), ...this.queued.keys()]
      .filter((id, index, ids) => ids.indexOf(id) === index)
      .map((id) => [id, (this.perEndpoint.get(id) ?? 0) + (this.queued.get(id)?.length ?? 0)] as const);
    const claimedAt = performance.now();
    const perEndpoint = this.config.OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY + this.prefetch;
    const result = await this.db.query<ClaimedRow>(CLAIM, [
      limit,
      this.config.OUTBOUND_WEBHOOKS_LEASE_SECONDS,
      busy.map(([id]) => id),
      this.instance,
      perEndpoint,
      busy.map(([, running]) => running),
      minAgeSeconds,
    ]);
    const rows = result.filter((row) => row.id !== null);
    this.noteBacklogs(rows, new Map(busy), perEndpoint);
    const claimed = rows.map((row) => ({
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
      claimedAt,
    }));
    return { claimed, heldBack: result[0]?.held_back === true };
  }

  /** Which endpoints got all a claim allowed them (they may have more due), and which got less. */
  private noteBacklogs(rows: ClaimedRow[], held: Map<string, number>, perEndpoint: number): void {
    const counts = new Map<string, number>();
    for (const row of rows) counts.set(row.endpoint_id, (counts.get(row.endpoint_id) ?? 0) + 1);
    for (const endpointId of this.backlogged) {
      // Read (it had room) and nothing found: nothing more due. Not read (no room): as it was.
      if (!counts.has(endpointId) && (held.get(endpointId) ?? 0) < perEndpoint) this.backlogged.delete(endpointId);
    }
    for (const [endpointId, count] of counts) {
      if (count >= perEndpoint - (held.get(endpointId) ?? 0)) this.backlogged.add(endpointId);
      else this.backlogged.delete(endpointId);
    }
  }

  /** Starts the attempt if the endpoint and the instance have a free slot, else queues it for the next one. */
  private start(delivery: ClaimedDelivery): void {
    if (this.hasSlot(delivery.endpoint_id)) return this.launch(delivery);
    const queue = this.queued.get(delivery.endpoint_id);
    if (queue) queue.push(delivery);
    else this.queued.set(delivery.endpoint_id, [delivery]);
    this.queuedCount += 1;
  }

  private hasSlot(endpointId: string): boolean {
    return (
      this.running.size < this.config.OUTBOUND_WEBHOOKS_CONCURRENCY &&
      (this.perEndpoint.get(endpointId) ?? 0) < this.config.OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY
    );
  }

  private launch(delivery: ClaimedDelivery): void {
    this.perEndpoint.set(delivery.endpoint_id, (this.perEndpoint.get(delivery.endpoint_id) ?? 0) + 1);
    const run = this.attempt(delivery).finally(() => {
      this.running.delete(delivery.id);
      const left = (this.perEndpoint.get(delivery.endpoint_id) ?? 1) - 1;
      if (left > 0) this.perEndpoint.set(delivery.endpoint_id, left);
      else this.perEndpoint.delete(delivery.endpoint_id);
      // An endpoint that has started every delivery claimed ahead for it and may have more due claims now.
      this.wake(this.launchQueued());
    });
    this.running.set(delivery.id, run);
  }

  /**
   * Starts waiting deliveries that have a slot now. One that waited so long that its attempt might outlast
   * its lease is released instead (it should not happen, the prefetch being sized for the lease), so that
   * another instance can never attempt it at the same time. True when the last waiting delivery of an
   * endpoint that may have more due (backlogged) started.
   */
  private launchQueued(): boolean {
    if (this.stopping) return false;
    let drained = false;
    const latestStart = performance.now() - (this.config.OUTBOUND_WEBHOOKS_LEASE_SECONDS - this.config.OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS - 2) * 1000;
    const late: string[] = [];
    for (const [endpointId, queue] of this.queued) {
      while (queue.length > 0 && this.hasSlot(endpointId)) {
        this.queuedCount -= 1;
        const delivery = queue.shift()!;
        if (delivery.claimedAt < latestStart) late.push(delivery.id);
        else this.launch(delivery);
      }
      if (queue.length === 0) {
        this.queued.delete(endpointId);
        if (this.backlogged.delete(endpointId)) drained = true;
      }
    }
    if (late.length > 0) {
      this.release(late).catch((error: unknown) => this.logger.warn({ code: (error as { code?: unknown }).code }, 'Releasing push deliveries failed; they are retried after their lease'));
    }
    return drained;
  }

  /** Sends one message; its outcome is recorded with others by the recorder, still under this instance's lease. */
  private async attempt(delivery: ClaimedDelivery): Promise<void> {
    const { event } = delivery;
    const body = JSON.stringify({ type: event.type, timestamp: event.createdAt, data: event });
    const attemptedAt = new Date();
    const headers = signedHeaders(delivery.secrets, event.id, Math.floor(attemptedAt.getTime() / 1000), body);
    const result = await this.sender.send(delivery.url, headers, body);
    if (result.error === 'shutdown') {
      await this.release([delivery.id]).catch((error: unknown) =>
        this.logger.warn({ deliveryId: delivery.id, code: (error as { code?: unknown }).code }, 'Releasing a push delivery failed; it is retried after its lease'),
      );
      return;
    }
    const outcome = this.outcomeOf(delivery, result);
    const delaySeconds = outcome === 'retrying' ? this.retryDelay(delivery.retry_step, result.retryAfterSeconds) : null;
    this.recorder.add({ deliveryId: delivery.id, attemptedAt, result, outcome, delaySeconds });
  }

  private outcomeOf(delivery: ClaimedDelivery, result: AttemptResult): AttemptOutcome {
    if (result.ok) return 'succeeded';
    if (result.status === 410) return 'gone';
    return delivery.retry_step < this.schedule.length ? 'retrying' : 'failed';
  }

  /** After the recorder wrote a batch: metrics, and a wake-up for retries due before the next poll. */
  private recorded(attempts: RecordedAttempt[]): void {
    for (const { outcome, result, delaySeconds } of attempts) {
      this.metrics.attempted(outcome, result.durationMs / 1000);
      if (delaySeconds !== null && delaySeconds < this.config.OUTBOUND_WEBHOOKS_POLL_SECONDS) this.wakeIn(delaySeconds);
    }
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
    await this.db.query(RELEASE, [ids, this.instance]);
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
    client.on('notification', ({ payload }) => payload !== this.instance && this.wake());
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

import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { describeFailure } from '../common/database-failure.js';
import { AppConfig, parseRetrySchedule } from '../config/app-config.js';
import { DATABASE_URL } from '../database/database.module.js';
import { Listener } from '../database/listener.js';
import { DocumentEventsService } from '../documents/document-events.service.js';
import { FeedSignal } from '../documents/feed-signal.js';
import { inLinkedSpan, outsideTrace } from '../telemetry/trace-context.js';
import { ClaimedDelivery, DeliveryClaimsRepository } from './delivery-claims.repository.js';
import { DeliveryRecorder, RecordedAttempt } from './delivery-recorder.js';
import { AttemptResult, DeliverySender } from './delivery-sender.js';
import { DeliverySlots } from './delivery-slots.js';
import { EventLoopLoad } from './event-loop-load.js';
import { AttemptOutcome, OutboundMetrics } from './outbound-metrics.js';
import { signedHeaders } from './signing.js';

/** Where a process that made deliveries due tells every instance's worker (a NOTIFY, see announce). */
export const DELIVERIES_CHANNEL = 'outbound_deliveries';

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
/** At most this many attempts' worth of deliveries per endpoint slot are claimed ahead. */
const MAX_PREFETCH_ROUNDS = 3;
/** How long a stopping instance lets running attempts finish before it aborts and releases them. */
const SHUTDOWN_GRACE_MS = 3000;

type Claimed = ClaimedDelivery & { secrets: string[]; claimedAt: number };

/**
 * The delivery engine of every instance. Due deliveries are claimed with FOR UPDATE SKIP LOCKED and a
 * lease, so instances never attempt the same delivery at once; a crashed instance's claims become due
 * again when their lease ends. It wakes when this process commits feed events (FeedSignal), and tells the
 * other instances with a NOTIFY, heard on a connection of their own; a slow poll covers missed
 * notifications, expired leases and retries scheduled by other instances. Which claimed delivery runs
 * when is DeliverySlots' decision.
 */
@Injectable()
export class DeliveryWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(DeliveryWorker.name);
  private readonly instance = `${hostname().slice(0, 40)}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private readonly schedule: number[];
  private readonly sender: DeliverySender;
  private readonly recorder: DeliveryRecorder;
  private readonly slots: DeliverySlots<Claimed>;
  private readonly attempts = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private listener: Listener | null = null;
  private stopping = false;
  /** The claim rounds: one at a time, spaced by CLAIM_INTERVAL_MS while they find work (see wake). */
  private pumping = false;
  private pumped: Promise<void> = Promise.resolve();
  private pumpTimer: NodeJS.Timeout | null = null;
  /** performance.now() before which no claim round starts unless an endpoint needs one. */
  private nextClaimAt = -Infinity;
  /** A wake-up that came during a claim round: another round after it, at once or after the interval. */
  private wakeAgain: 'now' | 'soon' | null = null;
  /** Set while a NOTIFY waits to tell the other instances of the commits since the first of them. */
  private notifyTimer: NodeJS.Timeout | null = null;

  constructor(
    @Inject(DATABASE_URL) private readonly databaseUrl: string,
    private readonly claims: DeliveryClaimsRepository,
    private readonly config: AppConfig,
    private readonly metrics: OutboundMetrics,
    private readonly load: EventLoopLoad,
    feed: FeedSignal,
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
    this.slots = new DeliverySlots({
      total: config.OUTBOUND_WEBHOOKS_CONCURRENCY,
      perEndpoint: config.OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY,
      ahead: Math.max(0, rounds) * config.OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY,
      latestStartMs: (config.OUTBOUND_WEBHOOKS_LEASE_SECONDS - attemptSeconds - 2) * 1000,
    });
    this.recorder = new DeliveryRecorder(claims, this.instance, (recorded) => this.recorded(recorded));
    // Outside the trace of the request whose commit told of new events: claims and NOTIFYs are the worker's own.
    feed.subscribe(() => outsideTrace(() => this.announce()));
  }

  /**
   * New deliveries may be due (a commit appended feed events, or a delivery was retried): this instance
   * claims at once, and one NOTIFY, sent outside any request's transaction, wakes the others to share the work.
   */
  announce(): void {
    this.wake();
    if (this.stopping || this.notifyTimer) return;
    // One NOTIFY for the commits of the next CLAIM_INTERVAL_MS: the others claim no more often than that.
    this.notifyTimer = setTimeout(() => {
      this.notifyTimer = null;
      // The payload names this instance, whose worker is awake already.
      this.claims
        .notify(DELIVERIES_CHANNEL, this.instance)
        .catch((error: unknown) =>
          this.logger.warn(describeFailure(error), 'Telling other instances of new push deliveries failed; they find them by polling'),
        );
    }, CLAIM_INTERVAL_MS);
  }

  onApplicationBootstrap(): void {
    this.listener = new Listener(
      this.databaseUrl,
      DELIVERIES_CHANNEL,
      (payload) => payload !== this.instance && this.wake(),
      // Notifications may have been missed while it was not connected.
      () => this.wake(),
      (error) => this.logger.warn(describeFailure(error), 'Push delivery listener lost its connection; polling until it is back'),
    );
    this.every(this.config.OUTBOUND_WEBHOOKS_POLL_SECONDS * 1000, () => this.wake());
    this.wake();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    for (const timer of this.timers) clearTimeout(timer);
    if (this.pumpTimer) clearTimeout(this.pumpTimer);
    if (this.notifyTimer) clearTimeout(this.notifyTimer);
    await this.listener?.close();
    // A claim round in progress finishes first: what it claims after `stopping` is released at once,
    // and so is what waits for a slot.
    await this.pumped;
    const waiting = this.slots.takeWaiting().map((delivery) => delivery.id);
    if (waiting.length > 0) await this.release(waiting);
    const finished = Promise.allSettled([...this.attempts]);
    await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref())]);
    // Attempts still running are aborted: they report `shutdown` and release their claims rather than
    // leaving them to the lease.
    await this.sender.close();
    await finished;
    await this.recorder.flush();
  }

  /**
   * Starts a claim round now, or at `nextClaimAt` if that is later, or right after the one in progress: an
   * idle instance answers a NOTIFY at once, a busy one claims each batch in one statement rather than a
   * statement per commit it hears about. `now`: at once whatever the interval, for an endpoint that has run
   * out of deliveries claimed ahead and may have more due.
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
      .catch((error: unknown) => this.logger.warn(describeFailure(error), 'Claiming push deliveries failed; will retry'))
      .finally(() => {
        this.pumping = false;
        const again = this.wakeAgain;
        this.wakeAgain = null;
        if (again) this.wake(again === 'now');
      });
  }

  private async pump(): Promise<void> {
    for (;;) {
      const room = this.slots.room();
      if (this.stopping || room <= 0) return;
      const startedAt = performance.now();
      const saturated = this.load.busy();
      const held = this.slots.held();
      const { claimed, heldBack } = await this.claims.claim({
        limit: room,
        leaseSeconds: this.config.OUTBOUND_WEBHOOKS_LEASE_SECONDS,
        instance: this.instance,
        perEndpoint: this.slots.perEndpoint,
        held,
        minAgeSeconds: saturated ? BUSY_DEFERRAL_SECONDS : 0,
      });
      // Rounds are CLAIM_INTERVAL_MS apart at least: every commit that appends feed events wakes the worker,
      // and a burst of them must cost a claim per interval, not one per commit (the first wake after a quiet
      // spell still claims at once). One that held deliveries back comes again after BUSY_RECHECK_MS, even
      // if nothing wakes it meanwhile.
      this.nextClaimAt = startedAt + (saturated ? BUSY_RECHECK_MS : CLAIM_INTERVAL_MS);
      if (saturated && heldBack) this.wakeAgain ??= 'soon';
      if (this.stopping) {
        if (claimed.length > 0) await this.release(claimed.map((delivery) => delivery.id));
        return;
      }
      const deliveries = claimed.map((row) => ({ ...row, secrets: [row.secret, ...(row.previousSecret ? [row.previousSecret] : [])], claimedAt: startedAt }));
      for (const delivery of this.slots.accept(deliveries, held)) this.launch(delivery);
      // A full batch means more may be due: claim again at once rather than after the interval.
      if (claimed.length < room) return;
    }
  }

  private launch(delivery: Claimed): void {
    const attempt = this.attempt(delivery).finally(() => {
      this.attempts.delete(attempt);
      if (this.stopping) return;
      const { start, late, claimNow } = this.slots.finished(delivery);
      for (const next of start) this.launch(next);
      if (late.length > 0) void this.release(late.map((d) => d.id));
      // An endpoint that has started every delivery claimed ahead for it and may have more due claims now.
      this.wake(claimNow);
    });
    this.attempts.add(attempt);
  }

  /** Sends one message; its outcome is recorded with others by the recorder, still under this instance's lease. */
  private async attempt(delivery: Claimed): Promise<void> {
    // Exactly the feed's view of the event (GET /api/v1/events), so `data` and the feed agree.
    const event = DocumentEventsService.view(delivery.event);
    const body = JSON.stringify({ type: event.type, timestamp: event.createdAt, data: event });
    const attemptedAt = new Date();
    const headers = signedHeaders(delivery.secrets, event.id, Math.floor(attemptedAt.getTime() / 1000), body);
    // A trace of its own, linked to the request that produced the event; the request to the endpoint carries its traceparent.
    const result = await inLinkedSpan(
      'push delivery',
      delivery.event.traceParent,
      {
        'gateway.delivery.id': delivery.id,
        'gateway.endpoint.id': delivery.endpointId,
        'gateway.event.id': event.id,
        'gateway.event.type': event.type,
        'gateway.delivery.attempt': delivery.retryStep + 1,
      },
      () => this.sender.send(delivery.url, headers, body),
      (sent) => ({
        'gateway.delivery.result': sent.ok ? 'delivered' : (sent.error ?? 'http_error'),
        ...(sent.status === null ? {} : { 'http.response.status_code': sent.status }),
        failed: !sent.ok,
      }),
    );
    if (result.error === 'shutdown') return this.release([delivery.id]);
    const outcome = this.outcomeOf(delivery, result);
    const delaySeconds = outcome === 'retrying' ? this.retryDelay(delivery.retryStep, result.retryAfterSeconds) : null;
    this.recorder.add({ deliveryId: delivery.id, attemptedAt, result, outcome, delaySeconds });
  }

  private outcomeOf(delivery: Claimed, result: AttemptResult): AttemptOutcome {
    if (result.ok) return 'succeeded';
    if (result.status === 410) return 'gone';
    // The gateway's own address rule refused it, which every retry would meet again: an endpoint of a local
    // trial, left behind after OUTBOUND_WEBHOOKS_ALLOW_PRIVATE was switched off, is not retried for days.
    if (result.error === 'blocked_address') return 'failed';
    return delivery.retryStep < this.schedule.length ? 'retrying' : 'failed';
  }

  /** After the recorder wrote a batch: metrics, and a wake-up for retries due before the next poll. */
  private recorded(attempts: RecordedAttempt[]): void {
    for (const { outcome, result, delaySeconds } of attempts) {
      this.metrics.attempted(outcome, result.durationMs / 1000);
      if (delaySeconds !== null && delaySeconds < this.config.OUTBOUND_WEBHOOKS_POLL_SECONDS) this.after(delaySeconds * 1000 + 50, () => this.wake());
    }
  }

  /** The schedule's delay ±10 % (so retries of many deliveries spread out), never sooner than Retry-After. */
  private retryDelay(step: number, retryAfter: number | null): number {
    const jittered = this.schedule[step] * (0.9 + Math.random() * 0.2);
    return Math.max(jittered, retryAfter ?? 0);
  }

  /** Gives the leases back at once; if that fails, they end by themselves after OUTBOUND_WEBHOOKS_LEASE_SECONDS. */
  private async release(ids: string[]): Promise<void> {
    await this.claims
      .release(ids, this.instance)
      .catch((error: unknown) =>
        this.logger.warn({ ...describeFailure(error), deliveries: ids.length }, 'Releasing push deliveries failed; they are retried after their lease'),
      );
  }

  private after(ms: number, task: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      task();
    }, ms);
    this.timers.add(timer);
  }

  private every(ms: number, task: () => void): void {
    this.timers.add(setInterval(task, ms));
  }
}

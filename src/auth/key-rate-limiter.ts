import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { describeFailure } from '../common/database-failure.js';
import { AppConfig } from '../config/app-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { Gcra, RateDecision } from './gcra.js';
import { SharedRateLimit } from './shared-rate-limit.js';

const SWEEP_INTERVAL_MS = 60_000;
/**
 * A shared store slower than this counts as down (docs/operations.md, "Shared rate limit (Redis)"): the
 * request goes on with this instance's counters. Chosen from checks measured on a busy machine
 * (docs/performance.md, "The shared rate limit"), well above the slowest of them: a healthy Redis behind a
 * busy event loop must not count as down, and only the checks in flight when Redis hangs wait this long.
 */
export const SHARED_STORE_TIMEOUT_MS = 500;
/** Checks after each (re)connection whose failure does not count the store down (see SharedRateLimit.warmingUp). */
export const WARM_UP_CHECKS = 20;
/** While the shared store is down, how often it is asked whether it is back. */
const PROBE_INTERVAL_MS = 1000;

/**
 * RATE_LIMIT_PER_MINUTE per API key (GCRA, constant work per request). With REDIS_URL the limit is shared
 * by every instance through Redis or Valkey, one round trip per check; while that store cannot be reached
 * or answers slower than SHARED_STORE_TIMEOUT_MS (past its warm-up), this instance counts on its own (each
 * instance then allows the limit on its share of the traffic), says so once at warn and in
 * `rate_limit_shared_store_up`, and goes back to the store as soon as it answers again. Without REDIS_URL
 * every instance counts on its own.
 */
@Injectable()
export class KeyRateLimiter implements OnApplicationShutdown {
  private readonly logger = new Logger('RateLimit');
  private readonly local: Gcra;
  private readonly sweeper: NodeJS.Timeout;
  private readonly shared: SharedRateLimit | null;
  private sharedUp = true;
  private probe: NodeJS.Timeout | null = null;

  constructor(
    private readonly config: AppConfig,
    metrics: MetricsService,
  ) {
    this.local = new Gcra(config.RATE_LIMIT_PER_MINUTE);
    this.sweeper = setInterval(() => this.local.sweep(), SWEEP_INTERVAL_MS).unref();
    this.shared = config.REDIS_URL ? new SharedRateLimit(config.REDIS_URL, SHARED_STORE_TIMEOUT_MS) : null;
    if (this.shared) {
      const up = () => (this.sharedUp ? 1 : 0);
      new Gauge({
        name: 'rate_limit_shared_store_up',
        help: 'Whether the shared rate-limit store (REDIS_URL) answers (1); 0 while this instance counts on its own',
        registers: [metrics.registry],
        collect() {
          this.set(up());
        },
      });
    }
  }

  get limit(): number {
    return this.config.RATE_LIMIT_PER_MINUTE;
  }

  async take(keyId: string): Promise<RateDecision> {
    if (this.shared && this.sharedUp) {
      // Decided when the check is sent: checks sent together while warming up all stay misses.
      const warmingUp = this.shared.warmingUp(WARM_UP_CHECKS);
      try {
        return await this.shared.take(keyId, this.limit);
      } catch (error) {
        if (!warmingUp) this.storeDown(error);
      }
    }
    return this.local.take(keyId);
  }

  onApplicationShutdown(): void {
    clearInterval(this.sweeper);
    if (this.probe) clearInterval(this.probe);
    void this.shared?.close();
  }

  private storeDown(error: unknown): void {
    if (!this.sharedUp) return;
    this.sharedUp = false;
    this.logger.warn(describeFailure(error), "The shared rate-limit store does not answer; counting with this instance's own counters until it does");
    this.probe = setInterval(() => {
      this.shared!.ping().then(
        () => this.storeUp(),
        () => undefined,
      );
    }, PROBE_INTERVAL_MS);
    this.probe.unref();
  }

  private storeUp(): void {
    if (this.sharedUp) return;
    this.sharedUp = true;
    if (this.probe) clearInterval(this.probe);
    this.probe = null;
    this.logger.log('The shared rate-limit store answers again; the limit is shared again');
  }
}

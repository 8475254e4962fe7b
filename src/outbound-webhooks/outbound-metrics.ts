import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { MetricsService } from '../metrics/metrics.service.js';
import { DeliveryClaimsRepository } from './delivery-claims.repository.js';

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed' | 'gone';

/** Push delivery metrics, in the application's registry beside the HTTP ones. */
@Injectable()
export class OutboundMetrics {
  private readonly attempts: Counter<'outcome'>;
  private readonly latency: Histogram<'result'>;

  constructor(metrics: MetricsService, claims: DeliveryClaimsRepository) {
    const registers = [metrics.registry];
    this.attempts = new Counter({
      name: 'outbound_webhook_attempts_total',
      help: 'Push delivery attempts by outcome: succeeded, retrying (failed, retry scheduled), failed (no retry left), gone (410, endpoint disabled)',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.latency = new Histogram({
      name: 'outbound_webhook_attempt_duration_seconds',
      help: 'Push delivery attempt latency, from sending to the end of the (bounded) response',
      labelNames: ['result'] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    // Read from the database on each scrape, so every instance reports the shared queue.
    // One query for both gauges of a scrape.
    let latest: Promise<{ depth: number; oldestSeconds: number }> | null = null;
    const due = () =>
      (latest ??= claims
        .due()
        .catch(() => ({ depth: NaN, oldestSeconds: NaN }))
        .finally(() => setImmediate(() => (latest = null))));
    new Gauge({
      name: 'outbound_webhook_queue_depth',
      help: 'Push deliveries due now and not yet delivered (enabled endpoints, all instances)',
      registers,
      async collect() {
        this.set((await due()).depth);
      },
    });
    new Gauge({
      name: 'outbound_webhook_oldest_due_age_seconds',
      help: 'How long the oldest due push delivery has been waiting',
      registers,
      async collect() {
        this.set((await due()).oldestSeconds);
      },
    });
  }

  attempted(outcome: AttemptOutcome, seconds: number): void {
    this.attempts.inc({ outcome });
    this.latency.observe({ result: outcome === 'succeeded' ? 'success' : 'failure' }, seconds);
  }
}

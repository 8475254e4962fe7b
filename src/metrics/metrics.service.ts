import { Injectable } from '@nestjs/common';
import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { PoolStatistics } from '../database/pool-statistics.js';

/** One registry per application instance, so two instances in one process never share counters. */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  private readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  private readonly duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  private readonly databaseUnavailable = new Counter({
    name: 'database_unavailable_total',
    help: 'Requests answered 503 because the database could not serve them, by cause (unreachable, saturated, session_ended, no_answer, statement_timeout, lock_timeout, read_only)',
    labelNames: ['cause'] as const,
    registers: [this.registry],
  });

  constructor(pool: PoolStatistics) {
    collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    new Gauge({
      name: 'db_pool_connections',
      help: "The request pool's open connections, by state: active (checked out) or idle",
      labelNames: ['state'] as const,
      registers,
      collect() {
        const { total, idle } = pool.counts();
        this.set({ state: 'active' }, total - idle);
        this.set({ state: 'idle' }, idle);
      },
    });
    new Gauge({
      name: 'db_pool_max_connections',
      help: 'The most connections the request pool opens (DB_POOL_SIZE)',
      registers,
      collect() {
        this.set(pool.counts().max);
      },
    });
    new Gauge({
      name: 'db_pool_waiting_requests',
      help: 'Callers waiting for a pooled connection right now',
      registers,
      collect() {
        this.set(pool.counts().waiting);
      },
    });
  }

  /** Labels use the route template (`/api/v1/documents/:id`), never the raw URL, to keep cardinality bounded. */
  instrument(fastify: FastifyInstance): void {
    fastify.addHook('onResponse', (request, reply, done) => {
      const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) };
      this.requests.inc(labels);
      this.duration.observe(labels, reply.elapsedTime / 1000);
      if (request.databaseFailure) this.databaseUnavailable.inc({ cause: request.databaseFailure });
      done();
    });
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}

import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Counter } from 'prom-client';
import { AuditLogService } from '../admin/audit-log.service.js';
import { ArchiveService } from '../archive/archive.service.js';
import { parseIsoDuration, shortestSeconds } from '../config/iso-duration.js';
import { describeFailure } from '../common/database-failure.js';
import { AppConfig } from '../config/app-config.js';
import { EntityManager } from 'typeorm';
import { PurgeBatch, PurgeRange } from '../database/purge-batch.js';
import { DocumentEventsService } from '../documents/document-events.service.js';
import { PaymentsService } from '../documents/payments.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { OutboundDeliveriesService } from '../outbound-webhooks/outbound-deliveries.service.js';
import { RetentionRepository } from './retention.repository.js';
import { Transactions } from '../database/transaction.js';

/** Rows per batch: each batch is one short transaction, so row locks last a batch's time only. */
export const RETENTION_BATCH = 5000;
/** The most one run spends on one table; the rest waits for the next run. */
const TABLE_BUDGET_MS = 5000;

interface Target {
  /** The table the purge walks. */
  table: string;
  /**
   * Every table a batch deletes from (those reached through ON DELETE CASCADE included): their locks are
   * taken together, so two instances never delete from one table at once, neither directly nor by cascade.
   */
  tables: readonly string[];
  period: (config: AppConfig) => string;
  purge: (tx: EntityManager, range: PurgeRange) => Promise<PurgeBatch>;
  /** Why the table must not be purged now, if it must not: rows past their period that something still needs. */
  heldBack?: (olderThan: Date) => Promise<string | null>;
}

/**
 * Retention (docs/operations.md, "Retention"): every RETENTION_INTERVAL_SECONDS each instance walks each table's oldest rows
 * in batches and deletes those past their period. Each module owns its statement; this service owns when,
 * in what order, how much at a time, the locks between instances and the count of what went. One timer
 * for all tables rather than one per module: an instance then runs one batch at a time, and a table
 * with a large backlog cannot hold the others back for more than its budget per run.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Retention');
  private readonly purged: Counter<'table'>;
  private readonly targets: readonly Target[];
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = false;

  constructor(
    private readonly transactions: Transactions,
    private readonly config: AppConfig,
    private readonly locks: RetentionRepository,
    events: DocumentEventsService,
    deliveries: OutboundDeliveriesService,
    payments: PaymentsService,
    audit: AuditLogService,
    archive: ArchiveService,
    metrics: MetricsService,
  ) {
    // Events first: their deliveries and attempts go with them, so the deliveries' own walk then finds fewer.
    this.targets = [
      {
        table: 'document_events',
        tables: ['document_events', 'outbound_deliveries', 'outbound_delivery_attempts'],
        period: (c) => c.RETENTION_EVENTS,
        purge: (tx, range) => events.purge(tx, range),
        // An event the archive has not sealed yet would be lost to it: the feed waits for sealing to catch up.
        heldBack: async (olderThan) => {
          const oldest = await archive.oldestUnsealed();
          return oldest && oldest < olderThan ? 'feed events past RETENTION_EVENTS are not sealed into the archive yet' : null;
        },
      },
      {
        table: 'outbound_deliveries',
        tables: ['outbound_deliveries', 'outbound_delivery_attempts'],
        period: (c) => c.RETENTION_DELIVERIES,
        purge: (tx, range) => deliveries.purgeFinished(tx, range),
      },
      { table: 'webhook_events', tables: ['webhook_events'], period: (c) => c.RETENTION_BANK_EVENTS, purge: (tx, range) => payments.purge(tx, range) },
      { table: 'admin_audit_log', tables: ['admin_audit_log'], period: (c) => c.RETENTION_AUDIT, purge: (tx, range) => audit.purge(tx, range) },
    ];
    this.purged = new Counter({
      name: 'retention_purged_rows_total',
      help: 'Rows deleted by the retention purge, by table (rows that went with them through a foreign key included)',
      labelNames: ['table'] as const,
      registers: [metrics.registry],
    });
    // Every table's series from the start, so that a rate over it exists before the first purge.
    for (const table of new Set(this.targets.flatMap((t) => t.tables))) this.purged.inc({ table }, 0);
  }

  onApplicationBootstrap(): void {
    this.schedule();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    // At most the batch in flight: the run checks `stopped` before each one.
    await this.running;
  }

  /** One run over every table; resolves with the rows purged per table (tests call it directly). */
  async run(): Promise<Map<string, number>> {
    const total = new Map<string, number>();
    for (const target of this.targets) {
      try {
        await this.purgeTable(target, total);
      } catch (error) {
        this.logger.warn({ ...describeFailure(error), table: target.table }, 'Retention purge failed; the next run tries again');
      }
    }
    // At debug: in steady state a run every minute purges a little; the metric is what to watch.
    if (total.size > 0) this.logger.debug({ purged: Object.fromEntries(total) }, 'Retention purge');
    return total;
  }

  private async purgeTable(target: Target, total: Map<string, number>): Promise<void> {
    const budget = Math.min(TABLE_BUDGET_MS, (this.config.RETENTION_INTERVAL_SECONDS * 1000) / 2);
    const deadline = performance.now() + budget;
    const olderThan = target.period(this.config);
    // The earliest the statement's cutoff (now() - period) can be, so that a hold is never too late.
    const reason = await target.heldBack?.(new Date(Date.now() - shortestSeconds(parseIsoDuration(olderThan)!) * 1000));
    if (reason) {
      this.logger.warn({ table: target.table }, `Retention purge held back: ${reason}`);
      return;
    }
    let after = '0';
    while (!this.stopped && performance.now() < deadline) {
      const done = await this.transactions.managed(async (tx) => {
        // Another instance is purging one of these tables right now: this one leaves it to it.
        if (!(await this.locks.tryLock(tx, target.tables))) return null;
        const { result: batch, deleted } = await this.locks.counting(tx, () => target.purge(tx, { olderThan, after, limit: RETENTION_BATCH }));
        deleted.set(target.table, Math.max(deleted.get(target.table) ?? 0, batch.deleted));
        return { batch, deleted };
      });
      if (done === null) return;
      // Counted once committed: a batch that rolled back deleted nothing.
      for (const [table, rows] of done.deleted) {
        if (rows === 0) continue;
        this.purged.inc({ table }, rows);
        total.set(table, (total.get(table) ?? 0) + rows);
      }
      if (!done.batch.more || done.batch.last === null) return;
      after = done.batch.last;
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.run().finally(() => {
        this.running = null;
        this.schedule();
      });
    }, this.config.RETENTION_INTERVAL_SECONDS * 1000);
  }
}

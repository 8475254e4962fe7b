import { Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { AppError } from '../common/app-error.js';
import { decodeCursor, encodeCursor, pageOf } from '../common/cursor.js';
import { isUuid } from '../common/validation.js';
import { EntityManager } from 'typeorm';
import { afterCommit } from '../database/after-commit.js';
import { PurgeBatch, PurgeRange } from '../database/purge-batch.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { annotateRequest, ATTR_BANK_EVENT_OUTCOME, linkRequestTo, requestTraceParent } from '../telemetry/trace-context.js';
import { BankEventOutcome } from './bank-event.entity.js';
import { DocumentEntity } from './document.entity.js';
import { DocumentsRepository } from './documents.repository.js';
import { FeedSignal } from './feed-signal.js';
import { providerStatusOf, transition } from './lifecycle.js';
import { BankEventRow, PaymentsRepository, ReceivedDelivery, WaitingEvent } from './payments.repository.js';

export interface BankEventView extends Omit<BankEventRow, 'id' | 'receivedAt'> {
  receivedAt: string;
}

const toBankEventView = (event: BankEventRow): BankEventView => ({
  eventId: event.eventId,
  eventType: event.eventType,
  status: event.status,
  providerReference: event.providerReference,
  outcome: event.outcome,
  documentId: event.documentId,
  receivedAt: event.receivedAt.toISOString(),
});

/** The bank's payment status events: stored, applied to documents through the lifecycle, listed. */
@Injectable()
export class PaymentsService {
  private readonly logger = new Logger('Payments');
  private readonly received: Counter<'outcome'>;

  constructor(
    private readonly payments: PaymentsRepository,
    private readonly documents: DocumentsRepository,
    private readonly feed: FeedSignal,
    metrics: MetricsService,
  ) {
    this.received = new Counter({
      name: 'bank_webhook_events_total',
      help: 'Bank webhook deliveries stored, by outcome: applied, ignored, duplicate, unmatched, ambiguous',
      labelNames: ['outcome'] as const,
      registers: [metrics.registry],
    });
  }

  /** Stores and applies one verified delivery; the caller answers 200 only after this resolves (committed). */
  async receive(delivery: ReceivedDelivery): Promise<BankEventOutcome> {
    const { outcome: stored, statusChanged, documentTraceParent } = await this.payments.receive(delivery, requestTraceParent());
    const outcome = stored ?? 'duplicate';
    this.received.inc({ outcome });
    annotateRequest({ [ATTR_BANK_EVENT_OUTCOME]: outcome });
    linkRequestTo(documentTraceParent);
    if (statusChanged) this.feed.appended();
    if (outcome === 'ambiguous') {
      // Which source's document is meant only an administrator can tell (POST /admin/webhook-events/{eventId}/apply).
      this.logger.warn({ eventId: delivery.eventId }, 'Bank event matches documents of several sources; applied to none until an administrator applies it');
    }
    return outcome;
  }

  /**
   * An administrator's decision for an ambiguous event: applied (through the lifecycle, as it would have
   * been) to `documentId`, one of the documents with its providerReference.
   */
  async applyTo(tx: EntityManager, eventId: string, documentId: string): Promise<{ event: BankEventView; document: DocumentEntity }> {
    const event = await this.payments.findForUpdate(tx, eventId);
    if (!event) throw new AppError('NOT_FOUND', 'No such bank event');
    if (event.outcome !== 'ambiguous') throw new AppError('INVALID_STATE_TRANSITION', `Only an ambiguous event is applied by an administrator; this one is ${event.outcome}`);
    await this.documents.lockProviderReference(tx, event.providerReference);
    const document = isUuid(documentId) ? await this.documents.findForUpdate(tx, documentId) : null;
    if (!document) throw new AppError('NOT_FOUND', 'No such document');
    if (document.providerReference !== event.providerReference) {
      throw AppError.validation([{ field: 'documentId', message: "must be a document with the event's providerReference" }]);
    }
    const { document: after, outcome } = await this.applyOne(tx, document, event);
    afterCommit(tx, () => this.feed.appended());
    return { event: toBankEventView({ ...event, outcome, documentId: after.id }), document: after };
  }

  /**
   * Applies, oldest first, the events that arrived before `document` (a new one with a providerReference,
   * whose lock `tx` holds), and marks them applied or ignored.
   */
  async applyWaiting(tx: EntityManager, document: DocumentEntity): Promise<DocumentEntity> {
    if (!document.providerReference) return document;
    for (const event of await this.payments.waiting(tx, document.providerReference)) ({ document } = await this.applyOne(tx, document, event));
    return document;
  }

  /** One stored event applied to a locked document through the lifecycle, and marked with what it did. */
  private async applyOne(tx: EntityManager, document: DocumentEntity, event: WaitingEvent) {
    const assessed = transition(document.status, { kind: 'provider', status: event.status });
    if (assessed.result !== 'refused') {
      const status = assessed.result === 'changed' ? assessed.to : document.status;
      document = await this.documents.change(tx, { id: document.id, status, previous: document.status, paymentStatus: providerStatusOf(event.status), eventId: event.eventId, traceParent: requestTraceParent() });
    }
    const outcome = assessed.result === 'refused' ? 'ignored' : 'applied';
    await this.payments.settle(tx, event.id, outcome, document.id);
    return { document, outcome } as const;
  }

  async page(filter: { outcome?: BankEventOutcome; cursor?: string; providerReference?: string }, limit: number): Promise<{ data: BankEventView[]; nextCursor: string | null }> {
    const before = filter.cursor ? decodeCursor('w', filter.cursor, 'cursor') : undefined;
    const rows = await this.payments.page({ outcome: filter.outcome, before, providerReference: filter.providerReference }, limit + 1);
    const page = pageOf(rows, limit, (last) => encodeCursor('w', last.id));
    return { data: page.rows.map(toBankEventView), nextCursor: page.nextCursor };
  }

  /**
   * Retention: a batch of bank events past RETENTION_BANK_EVENTS. Its minimum keeps an eventId far longer
   * than a signed delivery is accepted (WEBHOOK_TOLERANCE_SECONDS), so a purged one cannot come back as new;
   * an event still unmatched or ambiguous by then is purged too, and an event's duplicates go with it.
   */
  purge(tx: EntityManager, range: PurgeRange): Promise<PurgeBatch> {
    return this.payments.purge(tx, range);
  }

  /** Bank events of the last `hours` hours by outcome, in buckets of `bucketMinutes` (the console's chart). */
  async outcomesPerBucket(hours: number, bucketMinutes: number): Promise<Array<{ at: string } & Partial<Record<BankEventOutcome, number>>>> {
    const buckets = new Map<string, { at: string } & Partial<Record<BankEventOutcome, number>>>();
    for (const row of await this.payments.outcomesPerBucket(hours, bucketMinutes)) {
      const at = row.at.toISOString();
      const bucket = buckets.get(at) ?? { at };
      bucket[row.outcome] = row.count;
      buckets.set(at, bucket);
    }
    return [...buckets.values()];
  }
}

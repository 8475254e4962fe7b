import { Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { AppError } from '../common/app-error.js';
import { decodeCursor, encodeCursor, pageOf } from '../common/cursor.js';
import { isUuid } from '../common/validation.js';
import { createHash } from 'node:crypto';
import { EntityManager } from 'typeorm';
import { PurgeBatch, PurgeRange } from '../database/purge-batch.js';
import { Transaction, Transactions } from '../database/transaction.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { annotateRequest, ATTR_BANK_EVENT_OUTCOME, linkRequestTo, requestTraceParent } from '../telemetry/trace-context.js';
import { BankEventOutcome, PAYMENT_STATUS_EVENT } from './bank-event.entity.js';
import { changed, DocumentRecord, DocumentState, NewDocumentEvent } from './document-changes.js';
import { DocumentEventsRepository } from './document-events.repository.js';
import { DocumentsRepository, PROVIDER_REFERENCE, WaitingEvent } from './documents.repository.js';
import { FeedSignal } from './feed-signal.js';
import { providerStatusOf, transition } from './lifecycle.js';
import { BankEventRow, PaymentsRepository, ReceivedDelivery, Settlement } from './payments.repository.js';
import { bankEventTarget } from './reference-claims.js';

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
    private readonly transactions: Transactions,
    private readonly payments: PaymentsRepository,
    private readonly documents: DocumentsRepository,
    private readonly events: DocumentEventsRepository,
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
    const traceParent = requestTraceParent();
    const { outcome, statusChanged, documentTraceParent } = await this.transactions.run((tx) => this.store(tx, delivery, traceParent), {
      retryOnConflict: true,
    });
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
   * Read, decide, write: behind the reference's lock, a delivery whose eventId was stored before is a
   * duplicate (only its hash and times are kept); a PAYMENT_STATUS event goes to the document the
   * reference's claims name (reference-claims.ts) through the lifecycle, or waits (unmatched) or is held
   * for an administrator (ambiguous); any other event type is recorded and ignored.
   */
  private async store(tx: Transaction, delivery: ReceivedDelivery, traceParent: string | null) {
    const { seen, claims } = await this.payments.findingsForReceive(tx, delivery);
    const at = new Date();
    const targetId = bankEventTarget(claims.map((claim) => ({ id: claim.id, established: claim.paymentLastEventId !== null })));
    const target = claims.find((claim) => claim.id === targetId) ?? null;
    const documentTraceParent = target?.traceParent ?? null;
    const bodySha256 = createHash('sha256').update(delivery.rawBody).digest();
    if (seen) {
      this.payments.record(tx, {
        eventId: delivery.eventId,
        eventType: null,
        status: null,
        providerReference: null,
        outcome: 'duplicate',
        documentId: target?.id ?? null,
        rawBody: null,
        bodySha256,
        signedAt: delivery.signedAt,
        receivedAt: at,
        processedAt: null,
      });
      return { outcome: 'duplicate' as const, statusChanged: false, documentTraceParent };
    }
    let outcome: BankEventOutcome = delivery.eventType !== PAYMENT_STATUS_EVENT ? 'ignored' : claims.length > 0 ? 'ambiguous' : 'unmatched';
    let statusChanged = false;
    if (target) {
      const applied = this.apply(tx, target, delivery, traceParent, at);
      outcome = applied.outcome;
      statusChanged = applied.statusChanged;
    }
    const { eventId, eventType, status, providerReference, rawBody, signedAt } = delivery;
    this.payments.record(tx, {
      eventId,
      eventType,
      status,
      providerReference,
      outcome,
      documentId: target?.id ?? null,
      rawBody,
      bodySha256,
      signedAt,
      receivedAt: at,
      processedAt: null,
    });
    return { outcome, statusChanged, documentTraceParent };
  }

  /**
   * An administrator's decision for an ambiguous event: applied (through the lifecycle, as it would have
   * been) to `documentId`, one of the documents with its providerReference. In `tx`, where the caller
   * records who decided.
   */
  async applyTo(tx: Transaction, eventId: string, documentId: string): Promise<{ event: BankEventView; document: DocumentRecord }> {
    const event = await this.payments.findLocked(tx, eventId);
    if (!event) throw new AppError('NOT_FOUND', 'No such bank event');
    if (event.outcome !== 'ambiguous')
      throw new AppError('INVALID_STATE_TRANSITION', `Only an ambiguous event is applied by an administrator; this one is ${event.outcome}`);
    const document = isUuid(documentId) ? await this.documents.findLocked(tx, documentId, [PROVIDER_REFERENCE.with(event.providerReference)]) : null;
    if (!document) throw new AppError('NOT_FOUND', 'No such document');
    if (document.providerReference !== event.providerReference) {
      throw AppError.validation([{ field: 'documentId', message: "must be a document with the event's providerReference" }]);
    }
    const at = new Date();
    const applied = this.apply(tx, document, event, requestTraceParent(), at);
    this.payments.settle(tx, [{ id: event.id, outcome: applied.outcome }], document.id, at);
    tx.afterCommit(() => this.feed.appended());
    return { event: toBankEventView({ ...event, outcome: applied.outcome, documentId: document.id }), document: applied.document };
  }

  /**
   * Applies, oldest first, the events that arrived before `document` (a new one with a providerReference,
   * whose lock `tx` holds): the document as they leave it, the feed events of its changes, and how each
   * event is to be marked.
   */
  applyWaiting(document: DocumentRecord, waiting: readonly WaitingEvent[], traceParent: string | null, at: Date) {
    const events: NewDocumentEvent[] = [];
    const settlements: Settlement[] = [];
    for (const event of waiting) {
      const step = PaymentsService.assess(document, event, traceParent, at);
      document = step.document;
      if (step.event) events.push(step.event);
      settlements.push({ id: event.id, outcome: step.outcome });
    }
    return { document, events, settlements };
  }

  /** How the events that waited for a new document are marked, at `tx`'s commit. */
  settleWaiting(tx: Transaction, settlements: readonly Settlement[], documentId: string, at: Date): void {
    this.payments.settle(tx, settlements, documentId, at);
  }

  /** One event applied to a locked document, written at `tx`'s commit: its change and feed event. */
  private apply<T extends DocumentState>(tx: Transaction, document: T, event: Pick<WaitingEvent, 'eventId' | 'status'>, traceParent: string | null, at: Date) {
    const step = PaymentsService.assess(document, event, traceParent, at);
    if (step.outcome === 'applied') {
      this.documents.change(tx, step.document);
      this.events.append(tx, step.event ? [step.event] : []);
    }
    return { outcome: step.outcome, document: step.document, statusChanged: step.event !== null };
  }

  /**
   * What a bank event does to a document, through the lifecycle: a status it refuses leaves the document
   * as it is (the event is ignored); otherwise its payment is recorded, with the status it moves to.
   */
  private static assess<T extends DocumentState>(document: T, event: Pick<WaitingEvent, 'eventId' | 'status'>, traceParent: string | null, at: Date) {
    const assessed = transition(document.status, { kind: 'provider', status: event.status });
    if (assessed.result === 'refused') return { outcome: 'ignored' as const, document, event: null };
    const status = assessed.result === 'changed' ? assessed.to : document.status;
    const change = changed(document, { status, payment: { status: providerStatusOf(event.status), eventId: event.eventId }, traceParent }, at);
    return { outcome: 'applied' as const, ...change };
  }

  async page(
    filter: { outcome?: BankEventOutcome; cursor?: string; providerReference?: string },
    limit: number,
  ): Promise<{ data: BankEventView[]; nextCursor: string | null }> {
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

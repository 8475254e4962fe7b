import { Injectable, OnModuleInit } from '@nestjs/common';
import { Database, statement, Transaction } from '../database/database';
import { DocumentPaymentsService } from '../documents/document-payments.service';
import { documentChangeCtes } from '../documents/document-sql';
import { DocumentEntity } from '../documents/document.entity';
import { DocumentsService } from '../documents/documents.service';
import { WebhookOutcome } from './webhook-event.entity';
import { VerifiedDelivery } from './webhook-signature.pipe';

export const PAYMENT_STATUS_EVENT = 'PAYMENT_STATUS';

export interface WebhookEventView {
  eventId: string;
  eventType: string;
  status: string;
  providerReference: string;
  outcome: WebhookOutcome;
  documentId: string | null;
  receivedAt: string;
}

/**
 * Stores a delivery and, when it is the first of its eventId, applies it, in one statement.
 * $1 eventId, $2 eventType, $3 status, $4 providerReference, $5 outcome, $6 document id, $7 raw body,
 * $8 signed at; $9 the document's new status (null: leave the document alone), $10 payment status,
 * $11 the status before. `first` inserts nothing when the eventId is already there (the partial
 * unique index decides, also against a concurrent delivery, which it makes wait for us); then only
 * `duplicate` is stored: the eventId, the body's SHA-256 and the times, never the body again.
 */
const RECEIVE = statement(
  'webhook-receive',
  `WITH first AS (
     INSERT INTO webhook_events (event_id, event_type, status, provider_reference, outcome, document_id, raw_body, body_sha256, signed_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, sha256($7), $8)
     ON CONFLICT DO NOTHING
     RETURNING id),
   duplicate AS (
     INSERT INTO webhook_events (event_id, outcome, document_id, body_sha256, signed_at)
     SELECT $1, 'duplicate', $6, sha256($7), $8 WHERE NOT EXISTS (SELECT 1 FROM first)),
   ${documentChangeCtes({ id: '$6', status: '$9', paymentStatus: '$10', eventId: '$1', previous: '$11', when: '$9::varchar IS NOT NULL AND EXISTS (SELECT 1 FROM first)' })}
   SELECT EXISTS (SELECT 1 FROM first) AS first`,
);

const PENDING = statement(
  'webhook-pending',
  `SELECT id, event_id AS "eventId", status FROM webhook_events WHERE provider_reference = $1 AND outcome = 'unmatched' ORDER BY id`,
);

const SETTLE = statement(
  'webhook-settle',
  `UPDATE webhook_events SET outcome = $2, document_id = $3, processed_at = now() WHERE id = $1`,
);

/** A duplicate shows the fields of the event as first received (it stores only a hash of its own body). */
const LIST = statement(
  'webhook-list',
  `SELECT e.event_id AS "eventId", COALESCE(e.event_type, o.event_type) AS "eventType", COALESCE(e.status, o.status) AS status,
          COALESCE(e.provider_reference, o.provider_reference) AS "providerReference", e.outcome, e.document_id AS "documentId",
          e.received_at AS "receivedAt"
     FROM webhook_events e
     LEFT JOIN webhook_events o ON e.outcome = 'duplicate' AND o.event_id = e.event_id AND o.outcome <> 'duplicate'
    WHERE $1::varchar IS NULL OR e.outcome = $1
    ORDER BY e.id DESC
    LIMIT $2`,
);

@Injectable()
export class WebhookEventsService implements OnModuleInit {
  constructor(
    private readonly db: Database,
    private readonly payments: DocumentPaymentsService,
    private readonly documents: DocumentsService,
  ) {}

  onModuleInit(): void {
    this.documents.onCreated((tx, document) => this.applyUnmatched(tx, document));
  }

  /**
   * Stores and applies one verified delivery in a single transaction; the caller answers 200 only
   * after it commits. Decided under the providerReference lock (its own statement, so the document
   * look-up sees every document committed before the lock was granted).
   */
  receive({ payload, rawBody, signedAt }: VerifiedDelivery): Promise<WebhookOutcome> {
    return this.db.run(async (tx) => {
      // Sent together: PostgreSQL runs them in order, and the look-up's snapshot is taken once the lock is granted.
      const [, document] = await Promise.all([
        this.payments.lockProviderReference(tx, payload.providerReference),
        payload.eventType === PAYMENT_STATUS_EVENT ? this.payments.findForUpdate(tx, payload.providerReference) : null,
      ]);
      const assessment = document ? this.payments.assess(document, payload) : null;
      const outcome: WebhookOutcome =
        payload.eventType !== PAYMENT_STATUS_EVENT ? 'ignored' : !document ? 'unmatched' : assessment!.result === 'refused' ? 'ignored' : 'applied';
      const newStatus = !document || !assessment || assessment.result === 'refused' ? null : assessment.result === 'changed' ? assessment.to : document.status;
      const [{ first }] = await tx.queryAndCommit<{ first: boolean }>(RECEIVE, [
        payload.eventId,
        payload.eventType,
        payload.status,
        payload.providerReference,
        outcome,
        document?.id ?? null,
        rawBody,
        signedAt,
        newStatus,
        payload.status.toUpperCase(),
        document?.status ?? null,
      ]);
      return first ? outcome : 'duplicate';
    });
  }

  /** Events that arrived before their document: applied, oldest first, as the document is created. */
  private async applyUnmatched(tx: Transaction, document: DocumentEntity): Promise<DocumentEntity> {
    if (!document.providerReference) return document;
    const pending = await tx.query<{ id: string; eventId: string; status: string }>(PENDING, [document.providerReference]);
    for (const event of pending) {
      const assessment = this.payments.assess(document, event);
      document = await this.payments.apply(tx, document, event, assessment);
      await tx.query(SETTLE, [event.id, assessment.result === 'refused' ? 'ignored' : 'applied', document.id]);
    }
    return document;
  }

  async list(filter: { outcome?: WebhookOutcome; limit: number }): Promise<WebhookEventView[]> {
    const rows = await this.db.query<Omit<WebhookEventView, 'receivedAt'> & { receivedAt: Date }>(LIST, [filter.outcome ?? null, filter.limit]);
    return rows.map((e) => ({ ...e, receivedAt: e.receivedAt.toISOString() }));
  }
}

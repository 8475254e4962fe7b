import { Injectable, OnModuleInit } from '@nestjs/common';
import { Database, statement, Transaction } from '../database/database';
import { DocumentPaymentsService } from '../documents/document-payments.service';
import { documentChangeCtes, PROVIDER_TRANSITIONS } from '../documents/document-sql';
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
 * Stores a delivery and, when it is the first of its eventId, decides and applies it, in one statement:
 * $1 eventId, $2 eventType, $3 status as sent, $4 providerReference, $5 raw body, $6 signed at, $7 the
 * status upper-cased. `target` locks the document with the providerReference (for a PAYMENT_STATUS
 * event), `decision` is what `transition` says of it (PROVIDER_TRANSITIONS: no row there, refused).
 * `first` inserts nothing when the eventId is already there (the partial unique index decides, also
 * against a concurrent delivery, which it makes wait for us); then only `duplicate` is stored: the
 * eventId, the body's SHA-256 and the times, never the body again. Answers the stored outcome, or null
 * for a duplicate.
 */
const RECEIVE = statement(
  'webhook-receive',
  `WITH target AS MATERIALIZED (
     SELECT id, status FROM documents WHERE provider_reference = $4::varchar AND $2::varchar = '${PAYMENT_STATUS_EVENT}' FOR UPDATE),
   decision AS MATERIALIZED (
     SELECT t.id, t.status AS previous, provider_transitions.to_status, provider_transitions.to_status IS NOT NULL AS applies
       FROM target t LEFT JOIN ${PROVIDER_TRANSITIONS} ON provider_transitions.from_status = t.status AND provider_transitions.provider_status = $7::varchar),
   first AS (
     INSERT INTO webhook_events (event_id, event_type, status, provider_reference, outcome, document_id, raw_body, body_sha256, signed_at)
     SELECT $1, $2, $3, $4,
            CASE WHEN $2::varchar <> '${PAYMENT_STATUS_EVENT}' THEN 'ignored' WHEN d.id IS NULL THEN 'unmatched' WHEN d.applies THEN 'applied' ELSE 'ignored' END,
            d.id, $5, sha256($5), $6
       FROM (SELECT) AS one LEFT JOIN decision d ON true
     ON CONFLICT DO NOTHING
     RETURNING outcome),
   duplicate AS (
     INSERT INTO webhook_events (event_id, outcome, document_id, body_sha256, signed_at)
     SELECT $1, 'duplicate', (SELECT id FROM decision), sha256($5), $6 WHERE NOT EXISTS (SELECT 1 FROM first)),
   ${documentChangeCtes({
     id: '(SELECT id FROM decision)',
     status: '(SELECT to_status FROM decision)',
     paymentStatus: '$7',
     eventId: '$1',
     previous: '(SELECT previous FROM decision)',
     when: '(SELECT applies FROM decision) AND EXISTS (SELECT 1 FROM first)',
   })}
   SELECT (SELECT outcome FROM first) AS outcome`,
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
   * Stores and applies one verified delivery in a single transaction, in one round trip; the caller
   * answers 200 only after it commits. Decided under the providerReference lock, taken by a statement
   * of its own: RECEIVE, behind it, reads the document with a snapshot taken once the lock is granted,
   * so it sees every document committed before.
   */
  receive({ payload, rawBody, signedAt }: VerifiedDelivery): Promise<WebhookOutcome> {
    return this.db.run(async (tx) => {
      const [, [{ outcome }]] = await Promise.all([
        this.payments.lockProviderReference(tx, payload.providerReference),
        tx.queryAndCommit<{ outcome: WebhookOutcome | null }>(RECEIVE, [
          payload.eventId,
          payload.eventType,
          payload.status,
          payload.providerReference,
          rawBody,
          signedAt,
          payload.status.toUpperCase(),
        ]),
      ]);
      return outcome ?? 'duplicate';
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

import { Injectable } from '@nestjs/common';
import { Database, Transaction } from '../database/database';
import { PurgeBatch, PurgeRange } from '../database/purge-batch';
import { bind, sql } from '../database/sql';
import { BankEventOutcome, PAYMENT_STATUS_EVENT } from './bank-event.entity';
import { LOCK_PROVIDER_REFERENCE } from './documents.repository';
import { providerTransitions } from './lifecycle';

export interface BankEventRow {
  eventId: string;
  eventType: string;
  status: string;
  providerReference: string;
  outcome: BankEventOutcome;
  documentId: string | null;
  receivedAt: Date;
  /** The row's id: the position of a cursor. */
  position: string;
}

/**
 * providerTransitions() as a table for a FROM clause: `provider_transitions (from_status, provider_status,
 * to_status)`. The values are the lifecycle's own constants, never input: `transition` stays the one
 * definition of the lifecycle (lifecycle.spec.ts checks the table against it).
 */
const PROVIDER_TRANSITIONS = `(VALUES ${providerTransitions()
  .map(({ from, providerStatus, to }) => `('${from}', '${providerStatus}', '${to}')`)
  .join(', ')}) AS provider_transitions (from_status, provider_status, to_status)`;

/**
 * Stores a delivery and, when it is the first of its eventId, decides and applies it, in one statement:
 * $1 eventId, $2 eventType, $3 status as sent, $4 providerReference, $5 raw body, $6 signed at, $7 the
 * status upper-cased. `target` locks the documents with the providerReference (for a PAYMENT_STATUS event);
 * only when there is exactly one does `decision` say what the lifecycle makes of it (no row in
 * PROVIDER_TRANSITIONS: refused); documents of several sources make the event ambiguous, applied to none.
 * `first` inserts nothing when the eventId is already there (the partial unique index decides, also
 * against a concurrent delivery, which it makes wait for us); then only `duplicate` is stored: the
 * eventId, the body's SHA-256 and the times, never the body again. `changed` and `event` apply the
 * decision: the document's status and payment details, and its feed event when the status changes.
 * Answers the stored outcome (null for a duplicate) and the document it was applied to.
 */
const RECEIVE = sql(
  'bank-event-receive',
  `WITH target AS MATERIALIZED (
     SELECT id, status FROM documents WHERE provider_reference = $4::varchar AND $2::varchar = '${PAYMENT_STATUS_EVENT}' FOR UPDATE),
   claimers AS MATERIALIZED (SELECT count(*) AS n FROM target),
   decision AS MATERIALIZED (
     SELECT t.id, t.status AS previous, provider_transitions.to_status, provider_transitions.to_status IS NOT NULL AS applies
       FROM target t CROSS JOIN claimers
       LEFT JOIN ${PROVIDER_TRANSITIONS} ON provider_transitions.from_status = t.status AND provider_transitions.provider_status = $7::varchar
      WHERE claimers.n = 1),
   first AS (
     INSERT INTO webhook_events (event_id, event_type, status, provider_reference, outcome, document_id, raw_body, body_sha256, signed_at)
     SELECT $1, $2, $3, $4,
            CASE WHEN $2::varchar <> '${PAYMENT_STATUS_EVENT}' THEN 'ignored' WHEN c.n > 1 THEN 'ambiguous' WHEN d.id IS NULL THEN 'unmatched'
                 WHEN d.applies THEN 'applied' ELSE 'ignored' END,
            d.id, $5, sha256($5), $6
       FROM claimers c LEFT JOIN decision d ON true
     ON CONFLICT DO NOTHING
     RETURNING outcome, document_id),
   duplicate AS (
     INSERT INTO webhook_events (event_id, outcome, document_id, body_sha256, signed_at)
     SELECT $1, 'duplicate', (SELECT id FROM decision), sha256($5), $6 WHERE NOT EXISTS (SELECT 1 FROM first)),
   changed AS (
     UPDATE documents SET
       status = d.to_status, payment_status = $7::varchar, payment_last_event_id = $1::varchar, payment_updated_at = now(), updated_at = now()
       FROM decision d
      WHERE documents.id = d.id AND d.applies AND EXISTS (SELECT 1 FROM first)
     RETURNING documents.id, documents.source, documents.status, d.previous),
   event AS (
     INSERT INTO document_events (source, document_id, type, status, previous_status)
     SELECT source, id, 'document.status_changed', status, previous FROM changed WHERE status <> previous)
   SELECT (SELECT outcome FROM first) AS outcome, EXISTS (SELECT 1 FROM changed WHERE status <> previous) AS "statusChanged"`,
);

/** Events that arrived before their document: the oldest first. */
const WAITING = sql(
  'bank-event-waiting',
  `SELECT id, event_id AS "eventId", status FROM webhook_events WHERE provider_reference = $1 AND outcome = 'unmatched' ORDER BY id`,
);

const SETTLE = sql('bank-event-settle', `UPDATE webhook_events SET outcome = $2, document_id = $3, processed_at = now() WHERE id = $1`);

/** The event itself (not a duplicate's row) by its eventId, locked until the transaction ends. */
const FIND_FOR_UPDATE = sql(
  'bank-event-find-for-update',
  `SELECT id, event_id AS "eventId", event_type AS "eventType", status, provider_reference AS "providerReference", outcome,
          document_id AS "documentId", received_at AS "receivedAt", id::text AS position
     FROM webhook_events WHERE event_id = $1 AND outcome <> 'duplicate' FOR UPDATE`,
);

/** A duplicate shows the fields of the event as first received (it stores only a hash of its own body). */
const PAGE = sql(
  'bank-event-page',
  `SELECT e.event_id AS "eventId", COALESCE(e.event_type, o.event_type) AS "eventType", COALESCE(e.status, o.status) AS status,
          COALESCE(e.provider_reference, o.provider_reference) AS "providerReference", e.outcome, e.document_id AS "documentId",
          e.received_at AS "receivedAt", e.id::text AS position
     FROM webhook_events e
     LEFT JOIN webhook_events o ON e.outcome = 'duplicate' AND o.event_id = e.event_id AND o.outcome <> 'duplicate'
    WHERE ($1::varchar IS NULL OR e.outcome = $1) AND ($3::bigint IS NULL OR e.id < $3)
      AND ($4::varchar IS NULL OR COALESCE(e.provider_reference, o.provider_reference) = $4)
    ORDER BY e.id DESC
    LIMIT $2`,
);

export interface ReceivedDelivery {
  eventId: string;
  eventType: string;
  status: string;
  providerReference: string;
  rawBody: Buffer;
  signedAt: Date;
}

/** Bank events (duplicates included) of the last $1 hours in buckets of $2 minutes, by outcome. */
const OUTCOMES_PER_BUCKET = sql(
  'bank-event-outcomes-per-bucket',
  `SELECT date_bin(make_interval(mins => $2), received_at, 'epoch') AS at, outcome, count(*)::int AS count
     FROM webhook_events
    WHERE received_at > now() - make_interval(hours => $1)
    GROUP BY 1, 2 ORDER BY 1`,
);

/**
 * Retention: of the $3 bank events after id $1, those received before now() - $2 (an ISO 8601 duration),
 * and with each event the duplicates that repeat it, however recent (through idx_webhook_events_duplicates):
 * a duplicate shows the event's fields from the event's row, so it does not outlive it. `more`: all $3
 * were old enough, so older ones may follow.
 */
const PURGE = sql(
  'bank-event-purge',
  `WITH head AS (
     SELECT id, received_at < now() - $2::interval AS expired FROM webhook_events WHERE id > $1::bigint ORDER BY id LIMIT $3),
   gone AS (DELETE FROM webhook_events w USING head WHERE w.id = head.id AND head.expired RETURNING w.id, w.event_id, w.outcome),
   repeats AS (
     DELETE FROM webhook_events d
      WHERE d.outcome = 'duplicate' AND d.event_id IN (SELECT event_id FROM gone WHERE outcome <> 'duplicate')
        AND NOT EXISTS (SELECT 1 FROM gone WHERE gone.id = d.id)
     RETURNING 1)
   SELECT ((SELECT count(*) FROM gone) + (SELECT count(*) FROM repeats))::int AS deleted, (SELECT max(id) FROM head)::text AS last,
          COALESCE((SELECT count(*) = $3 AND bool_and(expired) FROM head), false) AS more`,
);

/** Every query of the bank's payment events (table webhook_events). */
@Injectable()
export class PaymentsRepository {
  constructor(private readonly db: Database) {}

  /**
   * Stores and applies one delivery in one transaction of one round trip, behind the providerReference
   * lock: RECEIVE's snapshot is taken once the lock is granted, so it sees every document committed before.
   * Null outcome: a duplicate.
   */
  async receive(delivery: ReceivedDelivery): Promise<{ outcome: BankEventOutcome | null; statusChanged: boolean }> {
    const { eventId, eventType, status, providerReference, rawBody, signedAt } = delivery;
    const [, [row]] = await this.db.transactionOf([
      bind(LOCK_PROVIDER_REFERENCE, providerReference),
      bind(RECEIVE, eventId, eventType, status, providerReference, rawBody, signedAt, status.toUpperCase()),
    ]);
    return row as { outcome: BankEventOutcome | null; statusChanged: boolean };
  }

  waiting(tx: Transaction, providerReference: string): Promise<Array<{ id: string; eventId: string; status: string }>> {
    return tx.query(WAITING, [providerReference]);
  }

  async settle(tx: Transaction, id: string, outcome: 'applied' | 'ignored', documentId: string): Promise<void> {
    await tx.query(SETTLE, [id, outcome, documentId]);
  }

  async findForUpdate(tx: Transaction, eventId: string): Promise<(BankEventRow & { id: string }) | null> {
    const [row] = await tx.query<BankEventRow & { id: string }>(FIND_FOR_UPDATE, [eventId]);
    return row ?? null;
  }

  page(filter: { outcome?: BankEventOutcome; before?: string; providerReference?: string }, limit: number): Promise<BankEventRow[]> {
    return this.db.query<BankEventRow>(PAGE, [filter.outcome ?? null, limit, filter.before ?? null, filter.providerReference ?? null]);
  }

  outcomesPerBucket(hours: number, bucketMinutes: number): Promise<Array<{ at: Date; outcome: BankEventOutcome; count: number }>> {
    return this.db.query(OUTCOMES_PER_BUCKET, [hours, bucketMinutes]);
  }

  async purge(tx: Transaction, range: PurgeRange): Promise<PurgeBatch> {
    const [batch] = await tx.query<PurgeBatch>(PURGE, [range.after, range.olderThan, range.limit]);
    return batch;
  }
}

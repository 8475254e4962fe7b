import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { PurgeBatch, PurgeRange } from '../database/purge-batch.js';
import { PreparedStatement, transactionOf } from '../database/prepared-statement.js';
import { BankEventEntity, BankEventOutcome, PAYMENT_STATUS_EVENT, ReceivedBankEvent } from './bank-event.entity.js';
import { LOCK_PROVIDER_REFERENCE } from './documents.repository.js';
import { LIFECYCLE, providerStatusOf } from './lifecycle.js';

/** A bank event as administrators list it: a duplicate shows the fields of the event as first received. */
export type BankEventRow = Pick<ReceivedBankEvent, 'id' | 'eventId' | 'eventType' | 'status' | 'providerReference' | 'outcome' | 'documentId' | 'receivedAt'>;

/** An event that arrived before its document, as applying it needs it. */
export type WaitingEvent = Pick<ReceivedBankEvent, 'id' | 'eventId' | 'status'>;

/** What storing a delivery did: its outcome (null for a duplicate), and of the document it is for, see RECEIVE. */
export interface ReceivedOutcome {
  outcome: BankEventOutcome | null;
  statusChanged: boolean;
  documentTraceParent: string | null;
}

/** A verified delivery of the bank, as it is stored: the fields its event carries, and its bytes as signed. */
export type ReceivedDelivery = Pick<ReceivedBankEvent, 'eventId' | 'eventType' | 'status' | 'providerReference' | 'signedAt'> & { rawBody: Buffer };

/**
 * The lifecycle's table (lifecycle.ts) for a FROM clause: `lifecycle (from_status, on_event, to_status)`.
 * Its values are the lifecycle's own constants, never input.
 */
const LIFECYCLE_TABLE = `(VALUES ${LIFECYCLE.map(({ from, on, to }) => `('${from}', '${on}', '${to}')`).join(', ')}) AS lifecycle (from_status, on_event, to_status)`;

/**
 * Stores a delivery and, when it is the first of its eventId, decides and applies it, in one statement
 * (a data-modifying CTE): $1 eventId, $2 eventType, $3 status as sent, $4 providerReference, $5 raw body,
 * $6 signed at, $7 the status upper-cased, $8 the request's traceparent (for the feed event). `target` locks the documents with the providerReference (for a
 * PAYMENT_STATUS event), each marked established when a bank event has been applied to it (its
 * payment_last_event_id is set); `decision` takes the document the event is for (reference-claims.ts,
 * `bankEventTarget`): the one established document, or else the only document, and looks the (status,
 * event) pair up in the lifecycle's table (no row: refused). No established document among several, or
 * several established, make the event ambiguous, applied to none. `first` inserts nothing when the eventId
 * is already there (the partial unique index decides, also against a concurrent delivery, which it makes
 * wait for us); then only `duplicate` is stored: the eventId, the body's SHA-256 and the times, never the
 * body again. `changed` and `event` apply the decision: the document's status and payment details, and its
 * feed event when the status changes. Answers the stored outcome (null for a duplicate), whether a status
 * changed, and the traceparent of the request that created the document the event is for.
 */
const RECEIVE = new PreparedStatement<ReceivedOutcome>(
  'bank-event-receive',
  `WITH target AS MATERIALIZED (
     SELECT id, status, payment_last_event_id IS NOT NULL AS established, trace_parent
       FROM documents WHERE provider_reference = $4::varchar AND $2::varchar = '${PAYMENT_STATUS_EVENT}' FOR UPDATE),
   claimers AS MATERIALIZED (SELECT count(*) AS n, count(*) FILTER (WHERE established) AS established FROM target),
   decision AS MATERIALIZED (
     SELECT t.id, t.status AS previous, lifecycle.to_status, lifecycle.to_status IS NOT NULL AS applies, t.trace_parent
       FROM target t CROSS JOIN claimers
       LEFT JOIN ${LIFECYCLE_TABLE} ON lifecycle.from_status = t.status AND lifecycle.on_event = $7::varchar
      WHERE CASE WHEN claimers.established = 0 THEN claimers.n = 1 ELSE claimers.established = 1 AND t.established END),
   first AS (
     INSERT INTO webhook_events (event_id, event_type, status, provider_reference, outcome, document_id, raw_body, body_sha256, signed_at)
     SELECT $1, $2, $3, $4,
            CASE WHEN $2::varchar <> '${PAYMENT_STATUS_EVENT}' THEN 'ignored' WHEN d.applies THEN 'applied' WHEN d.id IS NOT NULL THEN 'ignored'
                 WHEN c.n > 0 THEN 'ambiguous' ELSE 'unmatched' END,
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
     INSERT INTO document_events (source, document_id, type, status, previous_status, trace_parent)
     SELECT source, id, 'document.status_changed', status, previous, $8::varchar FROM changed WHERE status <> previous)
   SELECT (SELECT outcome FROM first) AS outcome, EXISTS (SELECT 1 FROM changed WHERE status <> previous) AS "statusChanged",
          (SELECT trace_parent FROM decision) AS "documentTraceParent"`,
);

/** Events that arrived before their document, oldest first: looked at by every create with a providerReference. */
const WAITING = new PreparedStatement<WaitingEvent>(
  'bank-event-waiting',
  `SELECT id, event_id AS "eventId", status FROM webhook_events WHERE provider_reference = $1 AND outcome = 'unmatched' ORDER BY id`,
);

/**
 * Retention: of the $3 bank events after id $1, those received before now() - $2 (an ISO 8601 duration),
 * and with each event the duplicates that repeat it, however recent (through idx_webhook_events_duplicates):
 * a duplicate shows the event's fields from the event's row, so it does not outlive it. `more`: all $3
 * were old enough, so older ones may follow.
 */
const PURGE = `WITH head AS (
     SELECT id, received_at < now() - $2::interval AS expired FROM webhook_events WHERE id > $1::bigint ORDER BY id LIMIT $3),
   gone AS (DELETE FROM webhook_events w USING head WHERE w.id = head.id AND head.expired RETURNING w.id, w.event_id, w.outcome),
   repeats AS (
     DELETE FROM webhook_events d
      WHERE d.outcome = 'duplicate' AND d.event_id IN (SELECT event_id FROM gone WHERE outcome <> 'duplicate')
        AND NOT EXISTS (SELECT 1 FROM gone WHERE gone.id = d.id)
     RETURNING 1)
   SELECT ((SELECT count(*) FROM gone) + (SELECT count(*) FROM repeats))::int AS deleted, (SELECT max(id) FROM head)::text AS last,
          COALESCE((SELECT count(*) = $3 AND bool_and(expired) FROM head), false) AS more`;

/** Every query of the bank's payment events (table webhook_events). */
@Injectable()
export class PaymentsRepository {
  constructor(@InjectRepository(BankEventEntity) private readonly events: Repository<BankEventEntity>) {}

  /**
   * Stores and applies one delivery in one transaction (one round trip), behind the providerReference
   * lock: RECEIVE's snapshot is taken once the lock is granted, so it sees every document committed
   * before. Null outcome: a duplicate.
   */
  async receive(delivery: ReceivedDelivery, traceParent: string | null): Promise<ReceivedOutcome> {
    const { eventId, eventType, status, providerReference, rawBody, signedAt } = delivery;
    const [, [row]] = await transactionOf(this.events.manager, [
      LOCK_PROVIDER_REFERENCE.with(providerReference),
      RECEIVE.with(eventId, eventType, status, providerReference, rawBody, signedAt, providerStatusOf(status), traceParent),
    ]);
    return row;
  }

  waiting(tx: EntityManager, providerReference: string): Promise<WaitingEvent[]> {
    return WAITING.run(tx, [providerReference]);
  }

  async settle(tx: EntityManager, id: string, outcome: 'applied' | 'ignored', documentId: string): Promise<void> {
    await tx.getRepository(BankEventEntity).update({ id }, { outcome, documentId, processedAt: () => 'now()' });
  }

  /** The event itself (not a duplicate's row) by its eventId, locked until `tx` ends. */
  findForUpdate(tx: EntityManager, eventId: string): Promise<ReceivedBankEvent | null> {
    return tx
      .getRepository(BankEventEntity)
      .createQueryBuilder('e')
      .where('e.eventId = :eventId', { eventId })
      .andWhere("e.outcome <> 'duplicate'")
      .setLock('pessimistic_write')
      .getOne() as Promise<ReceivedBankEvent | null>;
  }

  /** Newest first ($before: an id), of one outcome or all, of one providerReference or all. */
  page(filter: { outcome?: BankEventOutcome; before?: string; providerReference?: string }, limit: number): Promise<BankEventRow[]> {
    const query = this.events
      .createQueryBuilder('e')
      .leftJoin(BankEventEntity, 'o', "e.outcome = 'duplicate' AND o.eventId = e.eventId AND o.outcome <> 'duplicate'")
      .select('e.id', 'id')
      .addSelect('e.eventId', 'eventId')
      .addSelect('COALESCE(e.eventType, o.eventType)', 'eventType')
      .addSelect('COALESCE(e.status, o.status)', 'status')
      .addSelect('COALESCE(e.providerReference, o.providerReference)', 'providerReference')
      .addSelect('e.outcome', 'outcome')
      .addSelect('e.documentId', 'documentId')
      .addSelect('e.receivedAt', 'receivedAt');
    if (filter.outcome) query.andWhere('e.outcome = :outcome', { outcome: filter.outcome });
    if (filter.before) query.andWhere('e.id < :before', { before: filter.before });
    if (filter.providerReference) query.andWhere('COALESCE(e.providerReference, o.providerReference) = :reference', { reference: filter.providerReference });
    return query.orderBy('e.id', 'DESC').limit(limit).getRawMany<BankEventRow>();
  }

  /** Bank events (duplicates included) of the last `hours` hours in buckets of `bucketMinutes`, by outcome. */
  outcomesPerBucket(hours: number, bucketMinutes: number): Promise<Array<{ at: Date; outcome: BankEventOutcome; count: number }>> {
    return this.events
      .createQueryBuilder('e')
      .select("date_bin(make_interval(mins => :minutes), e.receivedAt, 'epoch')", 'at')
      .addSelect('e.outcome', 'outcome')
      .addSelect('count(*)::int', 'count')
      .where('e.receivedAt > now() - make_interval(hours => :hours)', { hours, minutes: bucketMinutes })
      .groupBy('1')
      .addGroupBy('2')
      .orderBy('1')
      .getRawMany();
  }

  async purge(tx: EntityManager, range: PurgeRange): Promise<PurgeBatch> {
    const [batch] = await tx.query<PurgeBatch[]>(PURGE, [range.after, range.olderThan, range.limit]);
    return batch;
  }
}

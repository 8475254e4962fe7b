import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository } from 'typeorm';
import { columnsOf, placeholders, selectColumns } from '../database/entity-sql.js';
import { PurgeBatch, PurgeRange } from '../database/purge-batch.js';
import { PreparedStatement } from '../database/prepared-statement.js';
import { Transaction } from '../database/transaction.js';
import { BankEventEntity, BankEventOutcome, PAYMENT_STATUS_EVENT, ReceivedBankEvent } from './bank-event.entity.js';
import type { DocumentState } from './document-changes.js';
import { DocumentEntity } from './document.entity.js';
import { PROVIDER_REFERENCE } from './documents.repository.js';

/** A bank event as administrators list it: a duplicate shows the fields of the event as first received. */
export type BankEventRow = Pick<ReceivedBankEvent, 'id' | 'eventId' | 'eventType' | 'status' | 'providerReference' | 'outcome' | 'documentId' | 'receivedAt'>;

/** A verified delivery of the bank, as it is stored: the fields its event carries, and its bytes as signed. */
export type ReceivedDelivery = Pick<ReceivedBankEvent, 'eventId' | 'eventType' | 'status' | 'providerReference' | 'signedAt'> & { rawBody: Buffer };

/** A bank event's row as it is written: the event itself, or a duplicate's (eventId, hash and times only); its id is the database's. */
export type NewBankEvent = Omit<BankEventEntity, 'id'>;

const WRITTEN = [
  'eventId',
  'eventType',
  'status',
  'providerReference',
  'outcome',
  'documentId',
  'rawBody',
  'bodySha256',
  'signedAt',
  'receivedAt',
  'processedAt',
] as const satisfies readonly (keyof NewBankEvent)[];

/**
 * What storing a delivery must know, read behind its providerReference's lock: whether its eventId was
 * stored before (then it is a duplicate), and, for a PAYMENT_STATUS event, the documents that claim the
 * reference, locked (reference-claims.ts decides which one the event is for).
 */
export interface ReceiveFindings {
  seen: boolean;
  claims: ClaimingDocument[];
}

/** A document that claims a delivery's reference, as deciding and applying the delivery needs it. */
export type ClaimingDocument = DocumentState & Pick<DocumentEntity, 'traceParent'>;

const CLAIMING = [
  'id',
  'source',
  'status',
  'paymentStatus',
  'paymentLastEventId',
  'paymentUpdatedAt',
  'updatedAt',
  'traceParent',
] as const satisfies readonly (keyof ClaimingDocument)[];

/** An event applied or ignored once its document exists: how it is marked. */
export interface Settlement {
  id: string;
  outcome: 'applied' | 'ignored';
}

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
  /** $1 eventId, $2 providerReference, $3 whether the event is a PAYMENT_STATUS one (only those go to documents). */
  private readonly receiveFindings: PreparedStatement<ClaimingDocument & { seen: boolean }>;
  private readonly insertStatement: PreparedStatement;
  /** $1 ids, $2 their outcomes, $3 the document, $4 when. */
  private readonly settleStatement = new PreparedStatement(
    'bank-event-settle',
    `UPDATE webhook_events w SET outcome = u.outcome, document_id = $3::uuid, processed_at = $4::timestamptz
       FROM unnest($1::bigint[], $2::varchar[]) AS u (id, outcome) WHERE w.id = u.id`,
  );
  private readonly lockedEvent: PreparedStatement<ReceivedBankEvent>;

  constructor(
    @InjectRepository(BankEventEntity) private readonly events: Repository<BankEventEntity>,
    @InjectRepository(DocumentEntity) documents: Repository<DocumentEntity>,
  ) {
    this.receiveFindings = new PreparedStatement(
      'bank-event-receive-findings',
      `SELECT d.*, s.seen
         FROM (SELECT EXISTS (SELECT 1 FROM webhook_events WHERE event_id = $1 AND outcome <> 'duplicate') AS seen) s
         LEFT JOIN LATERAL (SELECT ${selectColumns(documents.metadata, { only: CLAIMING })} FROM documents WHERE provider_reference = $2 AND $3::boolean FOR UPDATE) d ON true`,
    );
    this.insertStatement = new PreparedStatement(
      'bank-event-insert',
      `INSERT INTO webhook_events (${columnsOf<NewBankEvent>(events.metadata, WRITTEN)}) VALUES (${placeholders(WRITTEN.length)})`,
    );
    this.lockedEvent = new PreparedStatement(
      'bank-event-find-locked',
      `SELECT ${selectColumns(events.metadata)} FROM webhook_events WHERE event_id = $1 AND outcome <> 'duplicate' FOR UPDATE`,
    );
  }

  /** What storing `delivery` must know (ReceiveFindings), in `tx`, behind its providerReference's lock. */
  async findingsForReceive(tx: Transaction, delivery: ReceivedDelivery): Promise<ReceiveFindings> {
    const [rows] = await tx.read({
      locks: [PROVIDER_REFERENCE.with(delivery.providerReference)],
      reads: [this.receiveFindings.with(delivery.eventId, delivery.providerReference, delivery.eventType === PAYMENT_STATUS_EVENT)],
      waitsForRows: true,
    });
    return { seen: rows[0].seen, claims: rows.filter((row) => row.id !== null).map(({ seen: _seen, ...document }) => document) };
  }

  /** A bank event's row, written at `tx`'s commit. */
  record(tx: Transaction, event: NewBankEvent): void {
    tx.write(this.insertStatement.with(...WRITTEN.map((property) => event[property])));
  }

  /** Events that waited for `documentId`, marked with what applying them did, at `tx`'s commit. */
  settle(tx: Transaction, settlements: readonly Settlement[], documentId: string, at: Date): void {
    if (settlements.length === 0) return;
    tx.write(
      this.settleStatement.with(
        settlements.map(({ id }) => id),
        settlements.map(({ outcome }) => outcome),
        documentId,
        at,
      ),
    );
  }

  /** The event itself (not a duplicate's row) by its eventId, locked until `tx` ends. */
  async findLocked(tx: Transaction, eventId: string): Promise<ReceivedBankEvent | null> {
    const [[event]] = await tx.read({ reads: [this.lockedEvent.with(eventId)], waitsForRows: true });
    return event ?? null;
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

import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, Repository, SelectQueryBuilder } from 'typeorm';
import { columnsOf, placeholders, selectColumns } from '../database/entity-sql.js';
import { PreparedStatement, runTogether } from '../database/prepared-statement.js';
import { DocumentEntity } from './document.entity.js';
import type { DocumentStatus } from './lifecycle.js';

/** What a create writes; the database gives the rest (id, seq, status, payment, times). */
const WRITTEN = [
  'source',
  'externalId',
  'type',
  'taxpayerTaxId',
  'taxpayerName',
  'taxpayerCountry',
  'issueDate',
  'currency',
  'totalAmount',
  'taxAmount',
  'providerReference',
  'metadata',
  'traceParent',
] as const satisfies readonly (keyof DocumentEntity)[];

export type NewDocument = Pick<DocumentEntity, (typeof WRITTEN)[number]>;

/** A document another source created with the same providerReference, as a create learns of it. */
export type ReferenceHolder = Pick<DocumentEntity, 'id' | 'source'>;

/** A document with a providerReference, as administrators see the documents that claim it. */
export type ReferenceClaimRow = Pick<DocumentEntity, 'id' | 'source' | 'externalId' | 'status' | 'createdAt' | 'paymentLastEventId'>;

export interface DocumentFilter {
  status?: DocumentStatus;
  type?: string;
  externalId?: string;
  /** Only documents inserted before this one (its seq). */
  before?: string;
}

export const PROVIDER_REFERENCE_LOCK_NAMESPACE = 7_340_217;

/**
 * Serialises everything that concerns one providerReference (a bank event for it, a document created with
 * it), so an event can never be stored as unmatched while its document is being created. Sent as a statement
 * of its own, before the statement that reads: PostgreSQL takes a statement's snapshot when it starts it, so
 * a read behind the lock sees everything committed by whoever held it before.
 */
export const LOCK_PROVIDER_REFERENCE = new PreparedStatement('document-lock-provider-reference', `SELECT pg_advisory_xact_lock(${PROVIDER_REFERENCE_LOCK_NAMESPACE}, hashtext($1))`);

/**
 * A status or payment change and, when the status really changes, its `document.status_changed` event: $1 id,
 * $2 status, $3 payment status (null keeps the payment details), $4 bank event id, $5 the status before, $6 the
 * traceparent of the request that changes it (for its event). The
 * caller holds the row's lock (FOR UPDATE). A data-modifying CTE: the change and its event in one statement.
 */
const change = (columns: string) => `WITH changed AS (
     UPDATE documents SET
       status = $2::varchar,
       payment_status = COALESCE($3::varchar, payment_status),
       payment_last_event_id = COALESCE($4::varchar, payment_last_event_id),
       payment_updated_at = CASE WHEN $3::varchar IS NULL THEN payment_updated_at ELSE now() END,
       updated_at = now()
     WHERE id = $1
     RETURNING ${columns}),
   event AS (
     INSERT INTO document_events (source, document_id, type, status, previous_status, trace_parent)
     SELECT changed."source", changed."id", 'document.status_changed', changed."status", $5::varchar, $6::varchar FROM changed WHERE changed."status" <> $5::varchar)
   SELECT * FROM changed`;

/** Every query of the documents table. */
@Injectable()
export class DocumentsRepository {
  /**
   * The document as stored and its `document.created` event, or nothing for a duplicate externalId or
   * providerReference; whether bank events wait for its providerReference (the documents module's table
   * webhook_events), and the first document established for that reference (reference-claims.ts), if
   * any: read here so that a create needs no statement more for them.
   */
  private readonly insertStatement: PreparedStatement<DocumentEntity & { paymentsWaiting: boolean; heldById: string | null; heldBySource: string | null }>;
  /**
   * By primary key alone, the source compared by the caller: with `AND source = …` a generic plan made while
   * the statistics were older than a bulk load chose the (source, seq) index and read every document of the
   * source for each look-up.
   */
  private readonly findStatement: PreparedStatement<DocumentEntity>;
  private readonly changeText: string;

  constructor(@InjectRepository(DocumentEntity) private readonly documents: Repository<DocumentEntity>) {
    const { metadata } = documents;
    const columns = selectColumns(metadata);
    this.insertStatement = new PreparedStatement(
      'document-insert',
      `WITH doc AS (
         INSERT INTO documents (${columnsOf<DocumentEntity>(metadata, WRITTEN)}) VALUES (${placeholders(WRITTEN.length)})
         ON CONFLICT DO NOTHING RETURNING ${columns}),
       event AS (
         INSERT INTO document_events (source, document_id, type, status, trace_parent) SELECT doc."source", doc."id", 'document.created', doc."status", doc."traceParent" FROM doc)
       SELECT doc.*, EXISTS (
         SELECT 1 FROM webhook_events w WHERE w.provider_reference = doc."providerReference" AND w.outcome = 'unmatched') AS "paymentsWaiting",
         held.id AS "heldById", held.source AS "heldBySource"
         FROM doc LEFT JOIN LATERAL (
           SELECT e.id, e.source FROM documents e
            WHERE e.provider_reference = doc."providerReference" AND e.payment_last_event_id IS NOT NULL ORDER BY e.seq LIMIT 1) held ON true`,
    );
    this.findStatement = new PreparedStatement('document-find', `SELECT ${columns} FROM documents WHERE id = $1`);
    this.changeText = change(columns);
  }

  /**
   * The document as stored, with its `document.created` event, in `tx`, whether bank events wait for it,
   * and the first document of another source already established for its providerReference (`heldBy`);
   * null for a duplicate (nothing written). With a providerReference, behind that reference's lock, both
   * sent in one round trip.
   */
  async insert(tx: EntityManager, document: NewDocument): Promise<{ document: DocumentEntity; paymentsWaiting: boolean; heldBy: ReferenceHolder | null } | null> {
    const values = WRITTEN.map((property) => document[property]);
    const [row] = document.providerReference
      ? (await runTogether(tx, [LOCK_PROVIDER_REFERENCE.with(document.providerReference), this.insertStatement.with(...values)]))[1]
      : await this.insertStatement.run(tx, values);
    if (!row) return null;
    const { paymentsWaiting, heldById, heldBySource, ...inserted } = row;
    return { document: inserted, paymentsWaiting, heldBy: heldById && heldBySource ? { id: heldById, source: heldBySource } : null };
  }

  /** Takes the providerReference lock until `tx` ends (see LOCK_PROVIDER_REFERENCE). */
  async lockProviderReference(tx: EntityManager, providerReference: string): Promise<void> {
    await LOCK_PROVIDER_REFERENCE.run(tx, [providerReference]);
  }

  externalIdTaken(tx: EntityManager, source: string, externalId: string): Promise<boolean> {
    return tx.getRepository(DocumentEntity).existsBy({ source, externalId });
  }

  /** A read of one document, the hottest path: a prepared statement on a pooled connection. */
  async find(id: string): Promise<DocumentEntity | null> {
    const [document] = await this.findStatement.run(this.documents.manager, [id]);
    return document ?? null;
  }

  /** The document locked (FOR UPDATE) until `tx` ends. */
  findForUpdate(tx: EntityManager, id: string): Promise<DocumentEntity | null> {
    return tx.getRepository(DocumentEntity).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  /** Newest first by insertion order, optionally of one status, type or externalId (unique per source: one index probe). */
  page(source: string, filter: DocumentFilter, limit: number): Promise<DocumentEntity[]> {
    const query = this.filtered(filter).andWhere('d.source = :source', { source });
    if (filter.externalId) query.andWhere('d.externalId = :externalId', { externalId: filter.externalId });
    return query.orderBy('d.seq', 'DESC').limit(limit).getMany();
  }

  /** Administrators' search by providerReference, of every source or of one; newest first. */
  pageByProviderReference(providerReference: string, source: string | undefined, filter: Omit<DocumentFilter, 'externalId'>, limit: number): Promise<DocumentEntity[]> {
    const query = this.filtered(filter).andWhere('d.providerReference = :providerReference', { providerReference });
    if (source) query.andWhere('d.source = :source', { source });
    return query.orderBy('d.seq', 'DESC').limit(limit).getMany();
  }

  /**
   * The documents with a providerReference, established ones first (reference-claims.ts needs them all
   * among what it is given), then oldest first; `limit` at most.
   */
  claimsOf(providerReference: string, limit: number): Promise<ReferenceClaimRow[]> {
    return this.documents
      .createQueryBuilder('d')
      .select(['d.id', 'd.source', 'd.externalId', 'd.status', 'd.createdAt', 'd.paymentLastEventId'])
      .where('d.providerReference = :providerReference', { providerReference })
      .orderBy('d.paymentLastEventId IS NULL', 'ASC')
      .addOrderBy('d.seq', 'ASC')
      .limit(limit)
      .getMany();
  }

  /** Changes a locked document's status (and payment details), appending its feed event when the status changes. */
  async change(
    tx: EntityManager,
    change: { id: string; status: DocumentStatus; previous: DocumentStatus; paymentStatus: string | null; eventId: string | null; traceParent: string | null },
  ): Promise<DocumentEntity> {
    const [document] = await tx.query<DocumentEntity[]>(this.changeText, [change.id, change.status, change.paymentStatus, change.eventId, change.previous, change.traceParent]);
    return document;
  }

  private filtered(filter: Omit<DocumentFilter, 'externalId'>): SelectQueryBuilder<DocumentEntity> {
    const query = this.documents.createQueryBuilder('d');
    if (filter.status) query.andWhere('d.status = :status', { status: filter.status });
    if (filter.type) query.andWhere('d.type = :type', { type: filter.type });
    if (filter.before) query.andWhere('d.seq < :before', { before: filter.before });
    return query;
  }
}

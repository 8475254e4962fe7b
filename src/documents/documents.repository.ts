import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { MoreThan, Repository, SelectQueryBuilder } from 'typeorm';
import { columnsOf, placeholders, selectColumns } from '../database/entity-sql.js';
import { PreparedStatement } from '../database/prepared-statement.js';
import { BoundLock, Lock, rowsOf, Transaction } from '../database/transaction.js';
import type { DocumentRecord, DocumentState } from './document-changes.js';
import { DocumentEntity } from './document.entity.js';
import type { DocumentStatus } from './lifecycle.js';

/** What a status change writes (document-changes.ts, `changed`). */
const CHANGED = ['status', 'paymentStatus', 'paymentLastEventId', 'paymentUpdatedAt', 'updatedAt'] as const satisfies readonly (keyof DocumentRecord)[];

/** A document another source created with the same providerReference, as a create learns of it. */
export type ReferenceHolder = Pick<DocumentEntity, 'id' | 'source'>;

/** A document with a providerReference, as administrators see the documents that claim it. */
export type ReferenceClaimRow = Pick<DocumentEntity, 'id' | 'source' | 'externalId' | 'status' | 'createdAt' | 'paymentLastEventId'>;

/** An event that arrived before its document, as applying it needs it. */
export interface WaitingEvent {
  id: string;
  eventId: string;
  status: string;
}

/**
 * What a create needs to decide, read behind its providerReference's lock: the first document of any
 * source established for the reference (reference-claims.ts), the bank events that waited for it (the
 * documents module's table webhook_events), oldest first, and, when asked (`taken`), whether the source
 * already has the externalId or the reference: `null` when not asked.
 */
export interface CreateFindings {
  taken: { externalId: boolean; reference: boolean } | null;
  heldBy: ReferenceHolder | null;
  waiting: WaitingEvent[];
}

interface CreateFindingsRow {
  externalIdTaken?: boolean;
  referenceTaken?: boolean;
  heldById: string | null;
  heldBySource: string | null;
  waiting: WaitingEvent[];
}

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
 * it), so an event can never be stored as unmatched while its document is being created. Taken before the
 * reads, each of which then has a snapshot that sees everything committed by whoever held it before.
 */
export const PROVIDER_REFERENCE = new Lock('document-provider-reference', `pg_advisory_xact_lock(${PROVIDER_REFERENCE_LOCK_NAMESPACE}, hashtext($1::varchar))`);

/**
 * What a create reads: with `taken`, $1 source, $2 externalId, $3 providerReference (null: none); without,
 * $1 providerReference alone.
 */
const createFindings = (taken: boolean) => {
  const reference = taken ? '$3' : '$1';
  const probes = `
     EXISTS (SELECT 1 FROM documents WHERE source = $1 AND external_id = $2) AS "externalIdTaken",
     ($3::varchar IS NOT NULL AND EXISTS (SELECT 1 FROM documents WHERE source = $1 AND provider_reference = $3)) AS "referenceTaken",`;
  return `SELECT${taken ? probes : ''}
     held.id AS "heldById", held.source AS "heldBySource",
     (SELECT COALESCE(json_agg(json_build_object('id', w.id::text, 'eventId', w.event_id, 'status', w.status) ORDER BY w.id), '[]'::json)
        FROM webhook_events w WHERE w.provider_reference = ${reference}::varchar AND w.outcome = 'unmatched') AS waiting
   FROM (SELECT 1) one LEFT JOIN LATERAL (
     SELECT e.id, e.source FROM documents e WHERE e.provider_reference = ${reference}::varchar AND e.payment_last_event_id IS NOT NULL ORDER BY e.seq LIMIT 1) held ON true`;
};

/** Every query of the documents table. */
@Injectable()
export class DocumentsRepository {
  private readonly createFindings = new PreparedStatement<CreateFindingsRow>('document-create-findings', createFindings(false));
  private readonly createFindingsTaken = new PreparedStatement<CreateFindingsRow>('document-create-findings-taken', createFindings(true));
  private readonly written: Extract<keyof DocumentRecord, string>[];
  private readonly insertStatement: PreparedStatement;
  private readonly changeStatement: PreparedStatement;
  /**
   * By primary key alone, the source compared by the caller: with `AND source = …` a generic plan made while
   * the statistics were older than a bulk load chose the (source, seq) index and read every document of the
   * source for each look-up.
   */
  private readonly findStatement: PreparedStatement<DocumentEntity>;
  private readonly lockedStatement: PreparedStatement<DocumentEntity>;
  private readonly byIdsStatement: PreparedStatement<DocumentEntity>;

  constructor(@InjectRepository(DocumentEntity) private readonly documents: Repository<DocumentEntity>) {
    const { metadata } = documents;
    const columns = selectColumns(metadata);
    // Every column of the entity but `seq`, which PostgreSQL gives: a column added to the entity is written with no change here.
    this.written = metadata.columns
      .map((column) => column.propertyName as Extract<keyof DocumentRecord, string>)
      .filter((property) => property !== ('seq' as string));
    this.insertStatement = new PreparedStatement(
      'document-insert',
      `INSERT INTO documents (${columnsOf<DocumentRecord>(metadata, this.written)}) VALUES (${placeholders(this.written.length)})`,
    );
    this.changeStatement = new PreparedStatement(
      'document-change',
      `UPDATE documents SET (${columnsOf<DocumentRecord>(metadata, CHANGED)}) = ROW(${placeholders(CHANGED.length, 2)}) WHERE id = $1`,
    );
    this.findStatement = new PreparedStatement('document-find', `SELECT ${columns} FROM documents WHERE id = $1`);
    this.lockedStatement = new PreparedStatement('document-find-locked', `SELECT ${columns} FROM documents WHERE id = $1 FOR UPDATE`);
    // One array parameter, so the statement's text and plan are the same for any number of documents.
    this.byIdsStatement = new PreparedStatement('document-find-many', `SELECT ${columns} FROM documents WHERE id = ANY($1::uuid[])`);
  }

  /** What a create must know before it decides (CreateFindings), in `tx`, behind the providerReference's lock; with `taken`, whether the externalId or the reference is. */
  async findingsForCreate(
    tx: Transaction,
    document: Pick<DocumentRecord, 'source' | 'externalId' | 'providerReference'>,
    { taken }: { taken: boolean },
  ): Promise<CreateFindings> {
    const { source, externalId, providerReference } = document;
    // Without a reference nothing holds it or waits for it. Asked all the same, PostgreSQL would plan the
    // statement afresh on every call: a null folds its custom plan to nothing, cheaper than the generic one.
    const asked = taken
      ? this.createFindingsTaken.with(source, externalId, providerReference)
      : providerReference
        ? this.createFindings.with(providerReference)
        : null;
    const [[row] = []] = await tx.read({ locks: providerReference ? [PROVIDER_REFERENCE.with(providerReference)] : [], reads: asked ? [asked] : [] });
    return {
      taken: taken ? { externalId: row.externalIdTaken === true, reference: row.referenceTaken === true } : null,
      heldBy: row?.heldById && row.heldBySource ? { id: row.heldById, source: row.heldBySource } : null,
      waiting: row?.waiting ?? [],
    };
  }

  /** A new document, written at `tx`'s commit. */
  insert(tx: Transaction, document: DocumentRecord): void {
    tx.write(this.insertStatement.with(...this.written.map((property) => document[property])));
  }

  /** A changed document's status and payment, written at `tx`'s commit (the caller holds its row lock). */
  change(tx: Transaction, document: DocumentState): void {
    tx.write(this.changeStatement.with(document.id, ...CHANGED.map((property) => document[property])));
  }

  /** A read of one document, the hottest path: a prepared statement on a pooled connection. */
  async find(id: string): Promise<DocumentEntity | null> {
    const [document] = await this.findStatement.run(this.documents.manager, [id]);
    return document ?? null;
  }

  /** These documents, whatever their source (the archive's and its verifier's reads); in `tx` when given. */
  async byIds(ids: readonly string[], tx?: Transaction): Promise<DocumentEntity[]> {
    return ids.length === 0 ? [] : rowsOf(this.byIdsStatement.with(ids), this.documents.manager, tx);
  }

  /** Every source's documents in insertion order, `limit` after `seq` (the archive verifier's walk). */
  inOrder(afterSeq: string, limit: number): Promise<DocumentEntity[]> {
    return this.documents.find({ where: { seq: MoreThan(afterSeq) }, order: { seq: 'ASC' }, take: limit });
  }

  /** The document, locked (FOR UPDATE) until `tx` ends; `locks` taken before it is read. */
  async findLocked(tx: Transaction, id: string, locks: readonly BoundLock[] = []): Promise<DocumentEntity | null> {
    const [[document]] = await tx.read({ locks, reads: [this.lockedStatement.with(id)], waitsForRows: true });
    return document ?? null;
  }

  /** Newest first by insertion order, optionally of one status, type or externalId (unique per source: one index probe). */
  page(source: string, filter: DocumentFilter, limit: number): Promise<DocumentEntity[]> {
    const query = this.filtered(filter).andWhere('d.source = :source', { source });
    if (filter.externalId) query.andWhere('d.externalId = :externalId', { externalId: filter.externalId });
    return query.orderBy('d.seq', 'DESC').limit(limit).getMany();
  }

  /** Administrators' search by providerReference, of every source or of one; newest first. */
  pageByProviderReference(
    providerReference: string,
    source: string | undefined,
    filter: Omit<DocumentFilter, 'externalId'>,
    limit: number,
  ): Promise<DocumentEntity[]> {
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

  private filtered(filter: Omit<DocumentFilter, 'externalId'>): SelectQueryBuilder<DocumentEntity> {
    const query = this.documents.createQueryBuilder('d');
    if (filter.status) query.andWhere('d.status = :status', { status: filter.status });
    if (filter.type) query.andWhere('d.type = :type', { type: filter.type });
    if (filter.before) query.andWhere('d.seq < :before', { before: filter.before });
    return query;
  }
}

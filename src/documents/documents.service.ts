import { Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { AuthenticatedKey } from '../auth/authenticated-key.js';
import { AppError } from '../common/app-error.js';
import { decodeCursor, encodeCursor, pageOf } from '../common/cursor.js';
import { isUuid } from '../common/validation.js';
import { Transaction } from '../database/transaction.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { requestTraceParent } from '../telemetry/trace-context.js';
import { changed, created, DocumentFields, DocumentRecord } from './document-changes.js';
import { DocumentEventsRepository } from './document-events.repository.js';
import { DocumentEntity } from './document.entity.js';
import { DocumentsRepository, ReferenceClaimRow, ReferenceHolder } from './documents.repository.js';
import { CreateDocumentDto } from './dto/create-document.dto.js';
import { DocumentPageDto, DocumentResponseDto, toDocumentResponse } from './dto/document-response.dto.js';
import { ListDocumentsQueryDto } from './dto/list-documents-query.dto.js';
import { FeedSignal } from './feed-signal.js';
import { transition } from './lifecycle.js';
import { PaymentsService } from './payments.service.js';
import { bankEventTarget } from './reference-claims.js';

const DEFAULT_PAGE_SIZE = 20;

/** At most this many other documents with a document's providerReference are shown with it. */
const REFERENCE_CLAIMS_SHOWN = 50;

/** Another document with the same providerReference, as administrators see it. */
export interface ReferenceClaimView {
  id: string;
  source: string;
  externalId: string;
  status: DocumentEntity['status'];
  createdAt: string;
  /** A bank event has been applied to it: it is established for the reference. */
  receivedBankEvents: boolean;
}

/** Where a document's providerReference's bank events go, and which other documents claim the reference. */
export interface ReferenceClaimsView {
  bankEventsGoTo: string | null;
  referenceClaims: ReferenceClaimView[];
}

const toReferenceClaimView = (row: ReferenceClaimRow): ReferenceClaimView => ({
  id: row.id,
  source: row.source,
  externalId: row.externalId,
  status: row.status,
  createdAt: row.createdAt.toISOString(),
  receivedBankEvents: row.paymentLastEventId !== null,
});

export interface AdminDocumentFilter {
  source?: string;
  providerReference?: string;
  status?: ListDocumentsQueryDto['status'];
  type?: ListDocumentsQueryDto['type'];
  externalId?: string;
  cursor?: string;
}

@Injectable()
export class DocumentsService {
  private readonly logger = new Logger('Documents');
  private readonly laterClaims: Counter;

  constructor(
    private readonly documents: DocumentsRepository,
    private readonly events: DocumentEventsRepository,
    private readonly payments: PaymentsService,
    private readonly feed: FeedSignal,
    metrics: MetricsService,
  ) {
    this.laterClaims = new Counter({
      name: 'provider_reference_later_claims_total',
      help: "Documents created with a providerReference whose bank events already go to another source's document (created all the same)",
      registers: [metrics.registry],
    });
  }

  /**
   * POST /api/v1/documents, in `tx`, the request's transaction, whose first read claims its idempotency
   * key: read behind the providerReference's lock, decide, and write the document, its feed events and the
   * bank events that waited for its reference, committed with the stored answer or not at all.
   */
  async create(tx: Transaction, key: AuthenticatedKey, dto: CreateDocumentDto): Promise<DocumentResponseDto> {
    if (dto.source !== key.source) throw new AppError('UNAUTHORIZED', 'This API key is not valid for the source named in the request');
    const fields = DocumentsService.fieldsOf(dto);
    // A create assumes its externalId and reference are free: the unique constraints refuse its insert at
    // commit when they are not, and the request runs again (attempt 2), asking this time.
    const findings = await this.documents.findingsForCreate(tx, fields, { taken: tx.attempt > 1 });
    if (findings.taken?.externalId || findings.taken?.reference) {
      throw new AppError(
        'DUPLICATE_DOCUMENT',
        findings.taken.externalId
          ? `A document with externalId "${dto.externalId}" already exists for this source`
          : 'A document with this providerReference already exists for this source',
      );
    }
    const at = new Date();
    const fresh = created(fields, at);
    const { document, events, settlements } = this.payments.applyWaiting(fresh.document, findings.waiting, fields.traceParent, at);
    this.documents.insert(tx, document);
    this.events.append(tx, [fresh.event, ...events]);
    this.payments.settleWaiting(tx, settlements, document.id, at);
    tx.afterCommit(() => this.feed.appended());
    const { heldBy } = findings;
    if (heldBy) tx.afterCommit(() => this.laterClaim(document, heldBy));
    return toDocumentResponse(document);
  }

  /**
   * A later claim of a reference established for another source's document: created all the same, its
   * answer names nothing of the other (README, Security model), and the reference's bank events keep going
   * to the established one. Administrators see it: counted, logged with ids only (a reference may carry a
   * secret part), and shown with both documents (GET /admin/documents/{id}).
   */
  private laterClaim(document: DocumentRecord, heldBy: ReferenceHolder): void {
    this.laterClaims.inc();
    this.logger.warn(
      { documentId: document.id, source: document.source, establishedDocumentId: heldBy.id, establishedSource: heldBy.source },
      "Document created with a providerReference already established for another source's document; its bank events keep going there",
    );
  }

  async get(key: AuthenticatedKey, id: string): Promise<DocumentResponseDto> {
    const document = isUuid(id) ? await this.documents.find(id) : null;
    return toDocumentResponse(DocumentsService.ownedBy(key, document));
  }

  async list(key: AuthenticatedKey, query: ListDocumentsQueryDto): Promise<DocumentPageDto> {
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const before = query.cursor ? decodeCursor('d', query.cursor, 'cursor') : undefined;
    const rows = await this.documents.page(key.source, { status: query.status, type: query.type, externalId: query.externalId, before }, limit + 1);
    const page = pageOf(rows, limit, (last) => encodeCursor('d', last.seq));
    return { data: page.rows.map(toDocumentResponse), nextCursor: page.nextCursor };
  }

  /**
   * Administrators' read-only view across sources: of one source, or by providerReference (of every
   * source or one). Listing every source at once is not offered: no index orders all documents.
   */
  async pageForAdmin(filter: AdminDocumentFilter, limit: number): Promise<DocumentPageDto> {
    const before = filter.cursor ? decodeCursor('d', filter.cursor, 'cursor') : undefined;
    const rest = { status: filter.status, type: filter.type, before };
    let rows: DocumentEntity[];
    if (filter.providerReference) rows = await this.documents.pageByProviderReference(filter.providerReference, filter.source, rest, limit + 1);
    else if (filter.source) rows = await this.documents.page(filter.source, { ...rest, externalId: filter.externalId }, limit + 1);
    else throw AppError.validation([{ field: 'source', message: 'give a source or a providerReference' }]);
    const page = pageOf(rows, limit, (last) => encodeCursor('d', last.seq));
    return { data: page.rows.map(toDocumentResponse), nextCursor: page.nextCursor };
  }

  /** Any source's document, for administrators. */
  async getForAdmin(id: string): Promise<DocumentResponseDto> {
    const document = isUuid(id) ? await this.documents.find(id) : null;
    if (!document) throw new AppError('NOT_FOUND', 'No such document');
    return toDocumentResponse(document);
  }

  /**
   * For administrators only (no source ever learns that another uses its reference): the document the bank's
   * events for `document`'s providerReference go to (reference-claims.ts; null when none has it or they are
   * held as ambiguous), and the other documents that claim it.
   */
  async referenceClaimsForAdmin(document: Pick<DocumentResponseDto, 'id' | 'providerReference'>): Promise<ReferenceClaimsView> {
    if (!document.providerReference) return { bankEventsGoTo: null, referenceClaims: [] };
    const claims = await this.documents.claimsOf(document.providerReference, REFERENCE_CLAIMS_SHOWN + 1);
    return {
      bankEventsGoTo: bankEventTarget(claims.map((claim) => ({ id: claim.id, established: claim.paymentLastEventId !== null }))),
      referenceClaims: claims
        .filter((claim) => claim.id !== document.id)
        .slice(0, REFERENCE_CLAIMS_SHOWN)
        .map(toReferenceClaimView),
    };
  }

  /** POST /api/v1/documents/{id}/cancel, in the request's transaction `tx`: the document locked, the lifecycle asked, the change written. */
  async cancel(tx: Transaction, key: AuthenticatedKey, id: string): Promise<DocumentResponseDto> {
    const document = DocumentsService.ownedBy(key, isUuid(id) ? await this.documents.findLocked(tx, id) : null);
    const outcome = transition(document.status, { kind: 'cancel' });
    if (outcome.result !== 'changed') throw new AppError('INVALID_STATE_TRANSITION', `A document in status ${document.status} cannot be cancelled`);
    const { document: cancelled, event } = changed(document, { status: outcome.to, traceParent: requestTraceParent() }, new Date());
    this.documents.change(tx, cancelled);
    this.events.append(tx, event ? [event] : []);
    tx.afterCommit(() => this.feed.appended());
    return toDocumentResponse(cancelled);
  }

  /** The document's fields, from the request (the DTO's transforms made them canonical). */
  private static fieldsOf(dto: CreateDocumentDto): DocumentFields {
    return {
      source: dto.source,
      externalId: dto.externalId,
      type: dto.type,
      taxpayerTaxId: dto.taxpayer.taxId,
      taxpayerName: dto.taxpayer.name,
      taxpayerCountry: dto.taxpayer.country,
      issueDate: dto.issueDate,
      currency: dto.currency,
      totalAmount: dto.totalAmount,
      taxAmount: dto.taxAmount,
      providerReference: dto.providerReference ?? null,
      metadata: dto.metadata ?? {},
      traceParent: requestTraceParent(),
    };
  }

  /** Another source's document is, for this caller, no document at all. */
  private static ownedBy(key: AuthenticatedKey, document: DocumentEntity | null): DocumentEntity {
    if (document?.source !== key.source) throw new AppError('NOT_FOUND', 'No such document');
    return document;
  }
}

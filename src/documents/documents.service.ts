import { Injectable } from '@nestjs/common';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { AppError } from '../common/app-error';
import { decodeCursor, encodeCursor, pageOf } from '../common/cursor';
import { isUuid } from '../common/validation';
import { Database, Transaction } from '../database/database';
import { AnswerInAdvance, IdempotentOperation, InAdvanceOutcome, TRANSACTION_TIME } from '../idempotency/idempotent-operation';
import { DocumentEntity } from './document.entity';
import { DocumentDraft, DocumentsRepository, draftDocument } from './documents.repository';
import { CreateDocumentDto } from './dto/create-document.dto';
import { DocumentPageDto, documentResponse, DocumentResponseDto, toDocumentResponse } from './dto/document-response.dto';
import { ListDocumentsQueryDto } from './dto/list-documents-query.dto';
import { FeedSignal } from './feed-signal';
import { transition } from './lifecycle';
import { PaymentsService } from './payments.service';

const DEFAULT_PAGE_SIZE = 20;

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
  constructor(
    private readonly db: Database,
    private readonly documents: DocumentsRepository,
    private readonly payments: PaymentsService,
    private readonly feed: FeedSignal,
  ) {}

  /**
   * POST /api/v1/documents. The document is drafted here, its id included, so its answer is known before
   * the database replies: claim, document and feed event are then one statement (inAdvance). A duplicate,
   * or bank events waiting for its providerReference, take the general way (`run`).
   */
  create(key: AuthenticatedKey, dto: CreateDocumentDto): IdempotentOperation<DocumentResponseDto> {
    if (dto.source !== key.source) throw new AppError('UNAUTHORIZED', 'This API key is not valid for the source named in the request');
    const draft = draftDocument(dto);
    const inAdvance: AnswerInAdvance<DocumentResponseDto> = {
      answer: documentResponse(draft, TRANSACTION_TIME, TRANSACTION_TIME),
      claimAndRun: async (claim): Promise<InAdvanceOutcome> => {
        const created = await this.documents.createClaimed(draft, claim);
        if (created.created) {
          this.feed.appended();
          return { result: 'done', stored: created.answer };
        }
        return created.reason === 'not_claimed' ? { result: 'not_claimed', stored: created.stored } : { result: 'general' };
      },
    };
    return { location: `/api/v1/documents/${draft.id}`, inAdvance, run: (tx) => this.insert(tx, draft) };
  }

  /** The general way: applies the bank events waiting for the document, and names what a duplicate repeats. */
  private async insert(tx: Transaction, draft: DocumentDraft): Promise<DocumentResponseDto> {
    if (draft.providerReference) await this.documents.lockProviderReference(tx, draft.providerReference);
    const created = await this.documents.insert(tx, draft);
    if (!created) {
      const sameExternalId = await this.documents.externalIdTaken(tx, draft.source, draft.externalId);
      throw new AppError(
        'DUPLICATE_DOCUMENT',
        sameExternalId ? `A document with externalId "${draft.externalId}" already exists for this source` : 'A document with this providerReference already exists for this source',
      );
    }
    const document = await this.payments.applyWaiting(tx, created);
    tx.afterCommit(() => this.feed.appended());
    return toDocumentResponse(document);
  }

  async get(key: AuthenticatedKey, id: string): Promise<DocumentResponseDto> {
    const document = isUuid(id) ? await this.documents.find(this.db, id) : null;
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
    const document = isUuid(id) ? await this.documents.find(this.db, id) : null;
    if (!document) throw new AppError('NOT_FOUND', 'No such document');
    return toDocumentResponse(document);
  }

  async cancel(tx: Transaction, key: AuthenticatedKey, id: string): Promise<DocumentResponseDto> {
    const document = DocumentsService.ownedBy(key, isUuid(id) ? await this.documents.find(tx, id, { forUpdate: true }) : null);
    const outcome = transition(document.status, { kind: 'cancel' });
    if (outcome.result !== 'changed') throw new AppError('INVALID_STATE_TRANSITION', `A document in status ${document.status} cannot be cancelled`);
    const cancelled = await this.documents.change(tx, { id: document.id, status: outcome.to, previous: document.status, paymentStatus: null, eventId: null });
    tx.afterCommit(() => this.feed.appended());
    return toDocumentResponse(cancelled);
  }

  /** Another source's document is, for this caller, no document at all. */
  private static ownedBy(key: AuthenticatedKey, document: DocumentEntity | null): DocumentEntity {
    if (document?.source !== key.source) throw new AppError('NOT_FOUND', 'No such document');
    return document;
  }
}

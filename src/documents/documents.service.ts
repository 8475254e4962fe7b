import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { AuthenticatedKey } from '../auth/authenticated-key';
import { AppError } from '../common/app-error';
import { decodeCursor, encodeCursor } from '../common/cursor';
import { isUuid } from '../common/validation';
import { TransactionContext } from '../database/transaction-context';
import { DocumentEventsService } from './document-events.service';
import { DocumentPaymentsService } from './document-payments.service';
import { DocumentEntity } from './document.entity';
import { CreateDocumentDto } from './dto/create-document.dto';
import { DocumentPageDto, DocumentResponseDto } from './dto/document-response.dto';
import { ListDocumentsQueryDto } from './dto/list-documents-query.dto';
import { transition } from './lifecycle';

const DEFAULT_PAGE_SIZE = 20;

/** Work that belongs to a document's creation, run in its transaction (e.g. applying early payment events). */
export type DocumentCreatedHook = (manager: EntityManager, document: DocumentEntity) => Promise<void>;

@Injectable()
export class DocumentsService {
  private readonly createdHooks: DocumentCreatedHook[] = [];

  constructor(
    private readonly tx: TransactionContext,
    private readonly events: DocumentEventsService,
    private readonly payments: DocumentPaymentsService,
  ) {}

  /** Lets another module take part in creation without this module depending on it. */
  onCreated(hook: DocumentCreatedHook): void {
    this.createdHooks.push(hook);
  }

  /** Runs inside the idempotency transaction: the document, its event and the stored response commit together. */
  async create(key: AuthenticatedKey, dto: CreateDocumentDto): Promise<DocumentResponseDto> {
    if (dto.source !== key.source) throw new AppError('UNAUTHORIZED', 'This API key is not valid for the source named in the request');
    const manager = this.tx.manager;
    if (dto.providerReference) await this.payments.lockProviderReference(manager, dto.providerReference);
    // ON CONFLICT DO NOTHING: a duplicate is a business answer, not an error that aborts the transaction.
    const inserted = await manager
      .createQueryBuilder()
      .insert()
      .into(DocumentEntity)
      .values({
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
      })
      .orIgnore()
      .returning(['id'])
      .execute();
    const id = (inserted.raw as Array<{ id: string }>)[0]?.id;
    if (!id) throw await this.duplicateError(dto);
    await this.events.append(manager, { source: dto.source, documentId: id, type: 'document.created', status: 'PENDING_PAYMENT', previousStatus: null });
    const document = await manager.findOneByOrFail(DocumentEntity, { id });
    for (const hook of this.createdHooks) await hook(manager, document);
    return DocumentsService.view(document);
  }

  private async duplicateError(dto: CreateDocumentDto): Promise<AppError> {
    const sameExternalId = await this.tx.manager.existsBy(DocumentEntity, { source: dto.source, externalId: dto.externalId });
    return new AppError(
      'DUPLICATE_DOCUMENT',
      sameExternalId
        ? `A document with externalId "${dto.externalId}" already exists for this source`
        : 'A document with this providerReference already exists',
    );
  }

  async get(key: AuthenticatedKey, id: string): Promise<DocumentResponseDto> {
    return DocumentsService.view(await this.find(key, id));
  }

  async list(key: AuthenticatedKey, query: ListDocumentsQueryDto): Promise<DocumentPageDto> {
    const limit = query.limit ?? DEFAULT_PAGE_SIZE;
    const q = this.tx.manager.createQueryBuilder(DocumentEntity, 'd').where('d.source = :source', { source: key.source });
    if (query.status) q.andWhere('d.status = :status', { status: query.status });
    if (query.type) q.andWhere('d.type = :type', { type: query.type });
    if (query.externalId) q.andWhere('d.external_id = :externalId', { externalId: query.externalId });
    if (query.cursor) q.andWhere('d.seq < :before', { before: decodeCursor('d', query.cursor, 'cursor') });
    const rows = await q.orderBy('d.seq', 'DESC').limit(limit + 1).getMany();
    const page = rows.slice(0, limit);
    return {
      data: page.map(DocumentsService.view),
      nextCursor: rows.length > limit ? encodeCursor('d', page[page.length - 1].seq) : null,
    };
  }

  async cancel(key: AuthenticatedKey, id: string): Promise<DocumentResponseDto> {
    const manager = this.tx.manager;
    const document = await this.find(key, id, true);
    const outcome = transition(document.status, { kind: 'cancel' });
    if (outcome.result !== 'changed') {
      throw new AppError('INVALID_STATE_TRANSITION', `A document in status ${document.status} cannot be cancelled`);
    }
    const previous = document.status;
    document.status = outcome.to;
    await manager.save(document);
    await this.events.append(manager, { source: document.source, documentId: document.id, type: 'document.status_changed', status: outcome.to, previousStatus: previous });
    return DocumentsService.view(document);
  }

  /** Another source's document is, for this caller, no document at all. */
  private async find(key: AuthenticatedKey, id: string, forUpdate = false): Promise<DocumentEntity> {
    const query = this.tx.manager.createQueryBuilder(DocumentEntity, 'd').where('d.id = :id AND d.source = :source', { id, source: key.source });
    const document = isUuid(id) ? await (forUpdate ? query.setLock('pessimistic_write') : query).getOne() : null;
    if (!document) throw new AppError('NOT_FOUND', 'No such document');
    return document;
  }

  static view(d: DocumentEntity): DocumentResponseDto {
    return {
      id: d.id,
      source: d.source,
      externalId: d.externalId,
      type: d.type,
      taxpayer: { taxId: d.taxpayerTaxId, name: d.taxpayerName, country: d.taxpayerCountry },
      issueDate: d.issueDate,
      currency: d.currency,
      totalAmount: d.totalAmount,
      taxAmount: d.taxAmount,
      providerReference: d.providerReference,
      status: d.status,
      payment: { status: d.paymentStatus, lastEventId: d.paymentLastEventId, updatedAt: d.paymentUpdatedAt?.toISOString() ?? null },
      metadata: d.metadata,
      createdAt: d.createdAt.toISOString(),
      updatedAt: d.updatedAt.toISOString(),
    };
  }
}

import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/authenticated-key.js';
import type { AuthenticatedKey } from '../auth/authenticated-key.js';
import { ApiProblems } from '../common/problem.dto.js';
import type { FastifyReply } from 'fastify';
import { Transaction } from '../database/transaction.js';
import { Idempotent, IdempotencyTransaction } from '../idempotency/idempotency.interceptor.js';
import { DocumentsService } from './documents.service.js';
import { CreateDocumentDto } from './dto/create-document.dto.js';
import { DocumentPageDto, DocumentResponseDto } from './dto/document-response.dto.js';
import { ListDocumentsQueryDto } from './dto/list-documents-query.dto.js';

const DOCUMENT_ID = ApiParam({
  name: 'id',
  description: "The document's id; anything that is not one of the source's documents is a 404",
  example: '2b0f4c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f',
});
const DOCUMENT_LINKS = {
  getDocument: { operationId: 'getDocument', parameters: { id: '$response.body#/id' }, description: 'Read the document again' },
  cancelDocument: { operationId: 'cancelDocument', parameters: { id: '$response.body#/id' }, description: 'Cancel it while it awaits payment' },
};

@ApiTags('documents')
@Controller('api/v1/documents')
export class DocumentsController {
  constructor(private readonly documents: DocumentsService) {}

  @Post()
  @Idempotent()
  @ApiOperation({
    operationId: 'createDocument',
    summary: 'Submit a tax document',
    description:
      "Creates a document in status `PENDING_PAYMENT`. `source` must be the API key's own source (`GET /api/v1/me` tells it), otherwise 401. " +
      '`externalId` and `providerReference` are each unique within the source (409 `DUPLICATE_DOCUMENT`); another source using the same providerReference is not told of it. `taxAmount` must not exceed `totalAmount`. ' +
      'Bank events that arrived for the `providerReference` before the document are applied to it, in order, as it is created.',
  })
  @ApiCreatedResponse({
    type: DocumentResponseDto,
    description: 'Created',
    headers: {
      Location: {
        description: 'The new document: `/api/v1/documents/{id}`',
        required: true,
        schema: { type: 'string', example: '/api/v1/documents/2b0f4c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f' },
      },
    },
    links: DOCUMENT_LINKS,
  })
  @ApiProblems('VALIDATION_ERROR', 'DUPLICATE_DOCUMENT')
  async create(
    @CurrentKey() key: AuthenticatedKey,
    @Body() body: CreateDocumentDto,
    @IdempotencyTransaction() tx: Transaction,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<DocumentResponseDto> {
    const document = await this.documents.create(tx, key, body);
    reply.header('Location', `/api/v1/documents/${document.id}`);
    return document;
  }

  @Get()
  @ApiOperation({
    operationId: 'listDocuments',
    summary: "List the source's documents",
    description:
      'Newest first, filtered by status, type or externalId. Pass `nextCursor` as `cursor` for the next page; pages stay stable while documents are added. Unknown query parameters are a 422.',
  })
  @ApiOkResponse({ type: DocumentPageDto })
  @ApiProblems('VALIDATION_ERROR')
  list(@CurrentKey() key: AuthenticatedKey, @Query() query: ListDocumentsQueryDto): Promise<DocumentPageDto> {
    return this.documents.list(key, query);
  }

  @Get(':id')
  @ApiOperation({
    operationId: 'getDocument',
    summary: 'Read one document',
    description: "One of the source's documents, with its status and the bank's latest payment status.",
  })
  @DOCUMENT_ID
  @ApiOkResponse({ type: DocumentResponseDto })
  @ApiProblems('NOT_FOUND', 'VALIDATION_ERROR')
  get(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string): Promise<DocumentResponseDto> {
    return this.documents.get(key, id);
  }

  @Post(':id/cancel')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'cancelDocument',
    summary: 'Cancel a document',
    description: 'Only from `PENDING_PAYMENT` or `PAYMENT_FAILED`; any other status is a 409 `INVALID_STATE_TRANSITION`. Takes no body.',
  })
  @DOCUMENT_ID
  @ApiOkResponse({ type: DocumentResponseDto, description: 'The cancelled document' })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION')
  cancel(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string, @IdempotencyTransaction() tx: Transaction): Promise<DocumentResponseDto> {
    return this.documents.cancel(tx, key, id);
  }
}

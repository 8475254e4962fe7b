import { Body, Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { CurrentKey } from '../auth/authenticated-key';
import type { AuthenticatedKey } from '../auth/authenticated-key';
import { ApiProblems } from '../common/problem.dto';
import { DocumentsService } from './documents.service';
import { CreateDocumentDto } from './dto/create-document.dto';
import { DocumentPageDto, DocumentResponseDto } from './dto/document-response.dto';
import { ListDocumentsQueryDto } from './dto/list-documents-query.dto';

const IDEMPOTENCY_HEADER = {
  name: 'X-Idempotency-Key',
  required: true,
  description: 'Unique per operation, `[a-zA-Z0-9._:-]{8,128}`. A retry with the same key and body gets the original answer.',
  example: 'order-4711-create',
};

@ApiTags('documents')
@ApiSecurity('apiKey')
@ApiProblems('UNAUTHORIZED', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE', 'INTERNAL_ERROR')
@Controller('api/v1/documents')
export class DocumentsController {
  constructor(private readonly documents: DocumentsService) {}

  @Post()
  @ApiOperation({ summary: 'Submit a tax document' })
  @ApiHeader(IDEMPOTENCY_HEADER)
  @ApiCreatedResponse({ type: DocumentResponseDto, description: 'Created; `Location` names the new document' })
  @ApiProblems('VALIDATION_ERROR', 'IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_KEY_IN_USE', 'DUPLICATE_DOCUMENT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE')
  async create(@CurrentKey() key: AuthenticatedKey, @Body() body: CreateDocumentDto, @Res({ passthrough: true }) reply: FastifyReply) {
    const document = await this.documents.create(key, body);
    reply.header('Location', `/api/v1/documents/${document.id}`);
    return document;
  }

  @Get()
  @ApiOperation({ summary: "List the source's documents, newest first" })
  @ApiOkResponse({ type: DocumentPageDto })
  @ApiProblems('VALIDATION_ERROR')
  list(@CurrentKey() key: AuthenticatedKey, @Query() query: ListDocumentsQueryDto): Promise<DocumentPageDto> {
    return this.documents.list(key, query);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read one document' })
  @ApiOkResponse({ type: DocumentResponseDto })
  @ApiProblems('NOT_FOUND')
  get(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string): Promise<DocumentResponseDto> {
    return this.documents.get(key, id);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @ApiOperation({ summary: 'Cancel a document that is still awaiting payment' })
  @ApiHeader(IDEMPOTENCY_HEADER)
  @ApiOkResponse({ type: DocumentResponseDto })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION', 'VALIDATION_ERROR', 'IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_KEY_IN_USE')
  cancel(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string): Promise<DocumentResponseDto> {
    return this.documents.cancel(key, id);
  }
}

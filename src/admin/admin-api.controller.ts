import { Body, Controller, Get, Header, HttpCode, Param, Post, Query, Req, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { ApiProblems } from '../common/problem.dto';
import { ADMIN_TOKEN_SCHEME } from '../openapi/api-description';
import { AdminApiKeysService } from './admin-api-keys.service';
import { AdminTokenGuard } from './admin-token.guard';
import { PaymentsService } from '../documents/payments.service';
import { AdminWebhookEventsService } from './admin-webhook-events.service';
import { AuditLogService } from './audit-log.service';
import {
  ApiKeyListDto,
  ApplyWebhookEventDto,
  ApiKeyResponseDto,
  AuditLogPageDto,
  CreateApiKeyDto,
  IssuedApiKeyResponseDto,
  LimitQueryDto,
  ListApiKeysQueryDto,
  RotateApiKeyDto,
  WebhookEventDto,
  WebhookEventPageDto,
  WebhookEventsQueryDto,
} from './dto/api-key.dto';

const KEY_ID = ApiParam({ name: 'id', description: "The key's id; an unknown id (or one that is not a UUID) is a 404", example: '7c9e6679-7425-40de-944b-e07fc1f90ae7' });
const KEY_LINKS = {
  getApiKey: { operationId: 'getApiKey', parameters: { id: '$response.body#/id' }, description: 'Read the key' },
  revokeApiKey: { operationId: 'revokeApiKey', parameters: { id: '$response.body#/id' }, description: 'Revoke the key' },
  rotateApiKey: { operationId: 'rotateApiKey', parameters: { id: '$response.body#/id' }, description: 'Rotate the key' },
};

@ApiTags('admin')
@ApiBearerAuth(ADMIN_TOKEN_SCHEME)
// Every call: the token (401), the lockout after 10 failed attempts a minute per address (429), the database (503).
@ApiProblems('UNAUTHORIZED', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE')
@UseGuards(AdminTokenGuard)
@Controller('admin')
export class AdminApiController {
  constructor(
    private readonly keys: AdminApiKeysService,
    private readonly audit: AuditLogService,
    private readonly payments: PaymentsService,
    private readonly webhookEvents: AdminWebhookEventsService,
  ) {}

  @Post('api-keys')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    operationId: 'createApiKey',
    summary: 'Issue an API key',
    description: 'Issues a key bound to `source`. The key itself is in this response only: it is stored as a hash and never shown again. Needs no idempotency key.',
  })
  @ApiCreatedResponse({ type: IssuedApiKeyResponseDto, links: KEY_LINKS })
  @ApiProblems('VALIDATION_ERROR')
  create(@Body() body: CreateApiKeyDto, @Req() request: FastifyRequest) {
    return this.keys.create(body, request.ip);
  }

  @Get('api-keys')
  @ApiOperation({ operationId: 'listApiKeys', summary: 'List API keys', description: 'Every key, or those of one source, newest first; never the key or its hash.' })
  @ApiOkResponse({ type: ApiKeyListDto })
  @ApiProblems('VALIDATION_ERROR')
  async list(@Query() query: ListApiKeysQueryDto): Promise<ApiKeyListDto> {
    return { data: await this.keys.list(query.source) };
  }

  @Get('api-keys/:id')
  @ApiOperation({ operationId: 'getApiKey', summary: 'Read an API key', description: 'The key object, with its status and when it was last used; never the key or its hash.' })
  @KEY_ID
  @ApiOkResponse({ type: ApiKeyResponseDto })
  @ApiProblems('NOT_FOUND', 'VALIDATION_ERROR')
  get(@Param('id') id: string) {
    return this.keys.get(id);
  }

  @Post('api-keys/:id/revoke')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key',
    description: 'Takes effect on the very next request, on every instance. Revoking a revoked key answers 200 and keeps the first `revokedAt`. Takes no body.',
  })
  @KEY_ID
  @ApiOkResponse({ type: ApiKeyResponseDto })
  @ApiProblems('NOT_FOUND', 'VALIDATION_ERROR')
  revoke(@Param('id') id: string, @Req() request: FastifyRequest) {
    return this.keys.revoke(id, request.ip);
  }

  @Post('api-keys/:id/rotate')
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    operationId: 'rotateApiKey',
    summary: 'Rotate an API key',
    description:
      'Issues a successor with the same source, name and expiry; the old key keeps working for `gracePeriodSeconds`, then counts as revoked. ' +
      'Only an active key that was not rotated yet can be rotated (else 409 `INVALID_STATE_TRANSITION`). The body may be omitted.',
  })
  @KEY_ID
  @ApiCreatedResponse({ type: IssuedApiKeyResponseDto, description: 'The successor, with its key (shown this once)', links: KEY_LINKS })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION', 'VALIDATION_ERROR')
  rotate(@Param('id') id: string, @Body() body: RotateApiKeyDto, @Req() request: FastifyRequest) {
    return this.keys.rotate(id, body?.gracePeriodSeconds ?? 0, request.ip);
  }

  @Get('audit-log')
  @ApiOperation({ operationId: 'listAuditLog', summary: 'Read the audit log', description: 'Key changes (created, rotated, revoked), newest first, with who made them (address) and when. Reads are not recorded.' })
  @ApiOkResponse({ type: AuditLogPageDto })
  @ApiProblems('VALIDATION_ERROR')
  async auditLog(@Query() query: LimitQueryDto): Promise<AuditLogPageDto> {
    return { data: await this.audit.recent(query.limit ?? 50) };
  }

  @Get('webhook-events')
  @ApiOperation({
    operationId: 'listWebhookEvents',
    summary: 'List bank webhook deliveries',
    description: 'Every accepted delivery, newest first, with what it did (`outcome`), optionally only those with one outcome.',
  })
  @ApiOkResponse({ type: WebhookEventPageDto })
  @ApiProblems('VALIDATION_ERROR')
  async listWebhookEvents(@Query() query: WebhookEventsQueryDto): Promise<WebhookEventPageDto> {
    return { data: await this.payments.list({ outcome: query.status, limit: query.limit ?? 50 }) };
  }

  @Post('webhook-events/:eventId/apply')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'applyWebhookEvent',
    summary: 'Apply an ambiguous bank event',
    description:
      'A bank event whose providerReference documents of several sources have is applied to none of them (`ambiguous`). ' +
      'This applies it, through the lifecycle as the bank webhook would have, to the one document it was meant for, which must have that providerReference. ' +
      'Audited. 409 when the event is not ambiguous (applied, ignored, unmatched, or applied by an administrator already).',
  })
  @ApiParam({ name: 'eventId', description: "The bank's eventId", example: 'evt_000123' })
  @ApiOkResponse({ type: WebhookEventDto })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION', 'VALIDATION_ERROR')
  applyWebhookEvent(@Param('eventId') eventId: string, @Body() body: ApplyWebhookEventDto, @Req() request: FastifyRequest) {
    return this.webhookEvents.apply(eventId, body.documentId, request.ip);
  }
}

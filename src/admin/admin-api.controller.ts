import { Body, Controller, Get, HttpCode, Param, Post, Query, Req, UseGuards } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiCreatedResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { AdminApiKeysService } from './admin-api-keys.service';
import { AdminTokenGuard } from './admin-token.guard';
import { WebhookEventsService } from '../webhooks/webhook-events.service';
import { AuditLogService } from './audit-log.service';
import {
  ApiKeyResponseDto,
  CreateApiKeyDto,
  IssuedApiKeyResponseDto,
  LimitQueryDto,
  ListApiKeysQueryDto,
  RotateApiKeyDto,
  WebhookEventsQueryDto,
} from './dto/api-key.dto';

@ApiTags('admin')
@ApiBearerAuth()
@ApiUnauthorizedResponse({ description: 'UNAUTHORIZED: missing or wrong admin token' })
@ApiTooManyRequestsResponse({ description: 'RATE_LIMITED: more than 10 failed attempts from this address this minute' })
@UseGuards(AdminTokenGuard)
@Controller('admin')
export class AdminApiController {
  constructor(
    private readonly keys: AdminApiKeysService,
    private readonly audit: AuditLogService,
    private readonly webhookEvents: WebhookEventsService,
  ) {}

  @Post('api-keys')
  @ApiOperation({ summary: 'Issue an API key for a source; the key is in this response only' })
  @ApiCreatedResponse({ type: IssuedApiKeyResponseDto })
  create(@Body() body: CreateApiKeyDto, @Req() request: FastifyRequest) {
    return this.keys.create(body, request.ip);
  }

  @Get('api-keys')
  @ApiOperation({ summary: 'List keys, optionally of one source, newest first' })
  @ApiOkResponse({ schema: { properties: { data: { type: 'array', items: { $ref: '#/components/schemas/ApiKeyResponseDto' } } } } })
  async list(@Query() query: ListApiKeysQueryDto) {
    return { data: await this.keys.list(query.source) };
  }

  @Get('api-keys/:id')
  @ApiOkResponse({ type: ApiKeyResponseDto })
  @ApiNotFoundResponse({ description: 'NOT_FOUND' })
  get(@Param('id') id: string) {
    return this.keys.get(id);
  }

  @Post('api-keys/:id/revoke')
  @HttpCode(200)
  @ApiOperation({ summary: 'Revoke a key now; the very next request with it gets 401' })
  @ApiOkResponse({ type: ApiKeyResponseDto })
  revoke(@Param('id') id: string, @Req() request: FastifyRequest) {
    return this.keys.revoke(id, request.ip);
  }

  @Post('api-keys/:id/rotate')
  @ApiOperation({ summary: 'Issue a successor; the old key keeps working for the grace period' })
  @ApiCreatedResponse({ type: IssuedApiKeyResponseDto })
  rotate(@Param('id') id: string, @Body() body: RotateApiKeyDto, @Req() request: FastifyRequest) {
    return this.keys.rotate(id, body?.gracePeriodSeconds ?? 0, request.ip);
  }

  @Get('audit-log')
  @ApiOperation({ summary: 'Recent admin actions, newest first' })
  async auditLog(@Query() query: LimitQueryDto) {
    return { data: await this.audit.recent(query.limit ?? 50) };
  }

  @Get('webhook-events')
  @ApiOperation({ summary: 'Bank webhook deliveries, newest first, optionally by outcome' })
  async listWebhookEvents(@Query() query: WebhookEventsQueryDto) {
    return { data: await this.webhookEvents.list({ outcome: query.status, limit: query.limit ?? 50 }) };
  }
}

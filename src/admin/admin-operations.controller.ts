import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiCookieAuth, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ArchiveService } from '../archive/archive.service.js';
import { ArchiveStatusDto } from '../archive/dto/archive-queries.dto.js';
import { ApiProblems } from '../common/problem.dto.js';
import { DocumentsService } from '../documents/documents.service.js';
import { PaymentsService } from '../documents/payments.service.js';
import { ADMIN_SESSION_SCHEME, ADMIN_TOKEN_SCHEME } from '../openapi/api-description.js';
import { AdminDeliveriesQueryDto, AdminDeliveryDto, AdminDeliveryPageDto } from '../outbound-webhooks/dto/delivery.dto.js';
import { AdminWebhookEndpointDto } from '../outbound-webhooks/dto/webhook-endpoint.dto.js';
import { OutboundDeliveriesService } from '../outbound-webhooks/outbound-deliveries.service.js';
import { WebhookEndpointsService } from '../outbound-webhooks/webhook-endpoints.service.js';
import { AdminContext, RequiresRole } from './admin-actor.js';
import type { AuditContext } from './admin-actor.js';
import { AdminAuthGuard } from './admin-auth.guard.js';
import { AdminOperationsService } from './admin-operations.service.js';
import { ApplyWebhookEventDto, WebhookEventDto, WebhookEventPageDto, WebhookEventsQueryDto } from './dto/api-key.dto.js';
import {
  AdminDocumentDetailDto,
  AdminDocumentPageDto,
  AdminDocumentsQueryDto,
  AdminEndpointsQueryDto,
  AdminWebhookEndpointPageDto,
  BankEventStatsDto,
  DeliveryStatsDto,
  SetEndpointEnabledDto,
  StatsQueryDto,
} from './dto/operations.dto.js';

/** Buckets small enough to see a minute's trouble, few enough (at most 180) to draw. */
export function bucketMinutes(hours: number): number {
  return Math.max(1, Math.ceil((hours * 60) / 180));
}

/**
 * The daily view of the traffic: bank events, client endpoints and push deliveries of every source, the
 * documents behind them (read-only), and per-minute figures for the console's charts. Operators may
 * switch an endpoint and retry a delivery; an admin also applies an ambiguous bank event.
 */
@ApiTags('admin')
@ApiBearerAuth(ADMIN_TOKEN_SCHEME)
@ApiCookieAuth(ADMIN_SESSION_SCHEME)
@ApiProblems('UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE', 'VALIDATION_ERROR')
@UseGuards(AdminAuthGuard)
@Controller('admin')
export class AdminOperationsController {
  constructor(
    private readonly operations: AdminOperationsService,
    private readonly documents: DocumentsService,
    private readonly payments: PaymentsService,
    private readonly endpoints: WebhookEndpointsService,
    private readonly deliveries: OutboundDeliveriesService,
    private readonly archive: ArchiveService,
  ) {}

  @Get('archive')
  @ApiOperation({
    operationId: 'getArchiveStatus',
    summary: "The archive's state",
    description: 'The entries sealed, the seal lag, the latest checkpoint and the last `tdg archive verify` run with its first findings.',
  })
  @ApiOkResponse({ type: ArchiveStatusDto })
  archiveStatus(): Promise<ArchiveStatusDto> {
    return this.archive.status();
  }

  @Get('webhook-events')
  @ApiOperation({
    operationId: 'listWebhookEvents',
    summary: 'List bank webhook deliveries',
    description: 'Every accepted delivery, newest first, with what it did (`outcome`); optionally only those with one outcome or providerReference.',
  })
  @ApiOkResponse({ type: WebhookEventPageDto })
  listWebhookEvents(@Query() query: WebhookEventsQueryDto): Promise<WebhookEventPageDto> {
    return this.payments.page({ outcome: query.status, cursor: query.cursor, providerReference: query.providerReference }, query.limit ?? 50);
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
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION')
  applyWebhookEvent(@AdminContext() context: AuditContext, @Param('eventId') eventId: string, @Body() body: ApplyWebhookEventDto) {
    return this.operations.applyBankEvent(context, eventId, body.documentId);
  }

  @Get('webhook-endpoints')
  @ApiOperation({
    operationId: 'listAllWebhookEndpoints',
    summary: 'List client webhook endpoints',
    description: "Every source's endpoints, or those of one source, newest first; never a secret.",
  })
  @ApiOkResponse({ type: AdminWebhookEndpointPageDto })
  listEndpoints(@Query() query: AdminEndpointsQueryDto): Promise<AdminWebhookEndpointPageDto> {
    return this.endpoints.pageForAdmin({ source: query.source, cursor: query.cursor }, query.limit ?? 50);
  }

  @Patch('webhook-endpoints/:id')
  @RequiresRole('operator')
  @ApiOperation({
    operationId: 'setWebhookEndpointEnabled',
    summary: "Stop or resume a client's endpoint",
    description:
      '`enabled: false` stops a misbehaving endpoint (`disabledReason: "admin"`; its client cannot enable it again); `enabled: true` resumes it ' +
      'and its waiting deliveries. Audited. Needs the operator role.',
  })
  @ApiParam({ name: 'id', format: 'uuid', description: "The endpoint's id" })
  @ApiOkResponse({ type: AdminWebhookEndpointDto })
  @ApiProblems('NOT_FOUND')
  setEndpointEnabled(@AdminContext() context: AuditContext, @Param('id') id: string, @Body() body: SetEndpointEnabledDto): Promise<AdminWebhookEndpointDto> {
    return this.operations.setEndpointEnabled(context, id, body.enabled);
  }

  @Get('outbound-deliveries')
  @ApiOperation({
    operationId: 'listOutboundDeliveries',
    summary: 'List push deliveries',
    description: 'Newest first, with the endpoint URL and the document of each; by source, status, document, or `attention` (failed, or failing right now).',
  })
  @ApiOkResponse({ type: AdminDeliveryPageDto })
  listDeliveries(@Query() query: AdminDeliveriesQueryDto): Promise<AdminDeliveryPageDto> {
    return this.deliveries.pageForAdmin(query, query.limit ?? 50);
  }

  @Post('outbound-deliveries/:id/retry')
  @RequiresRole('operator')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'retryOutboundDelivery',
    summary: 'Retry a push delivery now',
    description:
      'A failed or pending delivery of any source is attempted again at once, from the start of the retry schedule. ' +
      '409 when it has succeeded or its endpoint is disabled. Takes no body. Audited. Needs the operator role.',
  })
  @ApiParam({ name: 'id', description: "The delivery's id", example: '1017' })
  @ApiAcceptedResponse({ type: AdminDeliveryDto })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION')
  retry(@AdminContext() context: AuditContext, @Param('id') id: string): Promise<AdminDeliveryDto> {
    return this.operations.retryDelivery(context, id);
  }

  @Get('documents')
  @ApiOperation({
    operationId: 'listAllDocuments',
    summary: 'Find documents',
    description: 'Read-only, newest first: the documents of a source, or those with a providerReference (of every source, or of one).',
  })
  @ApiOkResponse({ type: AdminDocumentPageDto })
  listDocuments(@Query() query: AdminDocumentsQueryDto): Promise<AdminDocumentPageDto> {
    return this.documents.pageForAdmin(query, query.limit ?? 50);
  }

  @Get('documents/:id')
  @ApiOperation({
    operationId: 'getAnyDocument',
    summary: 'Read a document with its events and deliveries',
    description: "Any source's document, its feed events and their push deliveries.",
  })
  @ApiParam({ name: 'id', format: 'uuid', description: "The document's id" })
  @ApiOkResponse({ type: AdminDocumentDetailDto })
  @ApiProblems('NOT_FOUND')
  getDocument(@Param('id') id: string): Promise<AdminDocumentDetailDto> {
    return this.operations.document(id);
  }

  @Get('stats/outbound-deliveries')
  @ApiOperation({
    operationId: 'getDeliveryStats',
    summary: 'Push attempts per minute',
    description: 'Attempts of every source by outcome, per bucket, over the last hours.',
  })
  @ApiOkResponse({ type: DeliveryStatsDto })
  async deliveryStats(@Query() query: StatsQueryDto): Promise<DeliveryStatsDto> {
    const minutes = bucketMinutes(query.hours ?? 3);
    return { bucketMinutes: minutes, data: await this.deliveries.attemptsPerBucket(query.hours ?? 3, minutes) };
  }

  @Get('stats/webhook-events')
  @ApiOperation({
    operationId: 'getBankEventStats',
    summary: 'Bank webhook outcomes over time',
    description: 'Accepted bank webhook deliveries by outcome, per bucket, over the last hours.',
  })
  @ApiOkResponse({ type: BankEventStatsDto })
  async bankEventStats(@Query() query: StatsQueryDto): Promise<BankEventStatsDto> {
    const minutes = bucketMinutes(query.hours ?? 3);
    return { bucketMinutes: minutes, data: await this.payments.outcomesPerBucket(query.hours ?? 3, minutes) };
  }
}

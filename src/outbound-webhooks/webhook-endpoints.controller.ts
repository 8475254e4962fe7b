import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiCreatedResponse, ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/authenticated-key';
import type { AuthenticatedKey } from '../auth/authenticated-key';
import { ApiProblems } from '../common/problem.dto';
import { DeliveryPageDto, DeliveryResponseDto, ListDeliveriesQueryDto } from './dto/delivery.dto';
import {
  CreateWebhookEndpointDto,
  UpdateWebhookEndpointDto,
  WebhookEndpointListDto,
  WebhookEndpointResponseDto,
  WebhookEndpointWithSecretDto,
} from './dto/webhook-endpoint.dto';
import { OutboundDeliveriesService } from './outbound-deliveries.service';
import { WebhookEndpointsService } from './webhook-endpoints.service';

const IDEMPOTENCY_HEADER = {
  name: 'X-Idempotency-Key',
  required: true,
  description: 'Unique per operation, `[a-zA-Z0-9._:-]{8,128}`. A retry with the same key and body gets the original answer.',
  example: 'endpoint-erp-prod-create',
};
const IDEMPOTENCY_PROBLEMS = ['VALIDATION_ERROR', 'IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_KEY_IN_USE'] as const;

@ApiTags('webhook endpoints')
@ApiSecurity('apiKey')
@ApiProblems('UNAUTHORIZED', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE', 'INTERNAL_ERROR')
@Controller('api/v1/webhook-endpoints')
export class WebhookEndpointsController {
  constructor(
    private readonly endpoints: WebhookEndpointsService,
    private readonly deliveries: OutboundDeliveriesService,
  ) {}

  @Post()
  @ApiOperation({ summary: 'Register an endpoint for push notifications; the signing secret is in this response only' })
  @ApiHeader(IDEMPOTENCY_HEADER)
  @ApiCreatedResponse({ type: WebhookEndpointWithSecretDto })
  @ApiProblems(...IDEMPOTENCY_PROBLEMS, 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE')
  create(@CurrentKey() key: AuthenticatedKey, @Body() body: CreateWebhookEndpointDto): Promise<WebhookEndpointWithSecretDto> {
    return this.endpoints.create(key.source, body);
  }

  @Get()
  @ApiOperation({ summary: "The source's endpoints, oldest first (never their secrets)" })
  @ApiOkResponse({ type: WebhookEndpointListDto })
  async list(@CurrentKey() key: AuthenticatedKey): Promise<WebhookEndpointListDto> {
    return { data: await this.endpoints.list(key.source) };
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read one endpoint' })
  @ApiOkResponse({ type: WebhookEndpointResponseDto })
  @ApiProblems('NOT_FOUND')
  get(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string): Promise<WebhookEndpointResponseDto> {
    return this.endpoints.get(key.source, id);
  }

  @Patch(':id')
  @ApiOperation({ summary: 'Change the URL, description, event types or enabled state' })
  @ApiOkResponse({ type: WebhookEndpointResponseDto })
  @ApiProblems('NOT_FOUND', 'VALIDATION_ERROR', 'UNSUPPORTED_MEDIA_TYPE')
  update(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string, @Body() body: UpdateWebhookEndpointDto): Promise<WebhookEndpointResponseDto> {
    return this.endpoints.update(key.source, id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Delete an endpoint; its pending deliveries are dropped' })
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiProblems('NOT_FOUND')
  remove(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string): Promise<void> {
    return this.endpoints.remove(key.source, id);
  }

  @Post(':id/rotate-secret')
  @HttpCode(200)
  @ApiOperation({ summary: 'New signing secret; during the grace period every message is signed with both' })
  @ApiHeader(IDEMPOTENCY_HEADER)
  @ApiOkResponse({ type: WebhookEndpointWithSecretDto })
  @ApiProblems('NOT_FOUND', ...IDEMPOTENCY_PROBLEMS)
  rotateSecret(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string): Promise<WebhookEndpointWithSecretDto> {
    return this.endpoints.rotateSecret(key.source, id);
  }

  @Get(':id/deliveries')
  @ApiOperation({ summary: "The endpoint's deliveries, newest first" })
  @ApiOkResponse({ type: DeliveryPageDto })
  @ApiProblems('NOT_FOUND', 'VALIDATION_ERROR')
  listDeliveries(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string, @Query() query: ListDeliveriesQueryDto): Promise<DeliveryPageDto> {
    return this.deliveries.list(key.source, id, query);
  }

  @Post(':id/deliveries/:deliveryId/retry')
  @HttpCode(202)
  @ApiOperation({ summary: 'Attempt a failed or pending delivery again now, with a fresh retry schedule' })
  @ApiHeader(IDEMPOTENCY_HEADER)
  @ApiAcceptedResponse({ type: DeliveryResponseDto })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION', ...IDEMPOTENCY_PROBLEMS)
  retry(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string, @Param('deliveryId') deliveryId: string): Promise<DeliveryResponseDto> {
    return this.deliveries.retry(key.source, id, deliveryId);
  }
}

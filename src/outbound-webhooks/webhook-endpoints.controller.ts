import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiAcceptedResponse, ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/authenticated-key.js';
import type { AuthenticatedKey } from '../auth/authenticated-key.js';
import { ApiProblems } from '../common/problem.dto.js';
import { Transaction } from '../database/transaction.js';
import { Idempotent, IdempotencyTransaction } from '../idempotency/idempotency.interceptor.js';
import { DeliveryPageDto, DeliveryResponseDto, ListDeliveriesQueryDto } from './dto/delivery.dto.js';
import {
  CreateWebhookEndpointDto,
  UpdateWebhookEndpointDto,
  WebhookEndpointListDto,
  WebhookEndpointResponseDto,
  WebhookEndpointWithSecretDto,
} from './dto/webhook-endpoint.dto.js';
import { OutboundDeliveriesService } from './outbound-deliveries.service.js';
import { WebhookEndpointsService } from './webhook-endpoints.service.js';

const ENDPOINT_ID = ApiParam({
  name: 'id',
  description: "The endpoint's id; anything that is not one of the source's endpoints is a 404",
  example: '5b6f91e1-4851-4c2a-a64f-76f5a71520ae',
});
const DELIVERY_ID = ApiParam({ name: 'deliveryId', description: "The delivery's id, from the delivery log", example: '1017' });
const ENDPOINT_LINKS = {
  getWebhookEndpoint: { operationId: 'getWebhookEndpoint', parameters: { id: '$response.body#/id' }, description: 'Read the endpoint' },
  listWebhookDeliveries: { operationId: 'listWebhookDeliveries', parameters: { id: '$response.body#/id' }, description: 'Its delivery log' },
};
const URL_RULES =
  '`url`: absolute `https://` without credentials or fragment, at most 2048 characters, whose host is not and does not resolve to a loopback, private, ' +
  'link-local or otherwise non-public address (checked again at every attempt, on the address connected to).';

@ApiTags('webhook endpoints')
@Controller('api/v1/webhook-endpoints')
export class WebhookEndpointsController {
  constructor(
    private readonly endpoints: WebhookEndpointsService,
    private readonly deliveries: OutboundDeliveriesService,
  ) {}

  @Post()
  @Idempotent()
  @ApiOperation({
    operationId: 'createWebhookEndpoint',
    summary: 'Register a webhook endpoint',
    description:
      'Every later feed event of the source whose type the endpoint subscribes to (`eventTypes`, absent: all) is POSTed to it, signed per Standard Webhooks with the `secret` of this answer, which is not shown by any GET. ' +
      `${URL_RULES} At most 10 endpoints per source (422). A URL the gateway operator stopped for this source cannot be registered again until they lift the stop (409).`,
  })
  @ApiCreatedResponse({ type: WebhookEndpointWithSecretDto, links: ENDPOINT_LINKS })
  @ApiProblems('INVALID_STATE_TRANSITION', 'VALIDATION_ERROR')
  create(
    @CurrentKey() key: AuthenticatedKey,
    @Body() body: CreateWebhookEndpointDto,
    @IdempotencyTransaction() tx: Transaction,
  ): Promise<WebhookEndpointWithSecretDto> {
    return this.endpoints.create(tx, key.source, body);
  }

  @Get()
  @ApiOperation({ operationId: 'listWebhookEndpoints', summary: "List the source's webhook endpoints", description: 'Oldest first; never their secrets.' })
  @ApiOkResponse({ type: WebhookEndpointListDto })
  async list(@CurrentKey() key: AuthenticatedKey): Promise<WebhookEndpointListDto> {
    return { data: await this.endpoints.list(key.source) };
  }

  @Get(':id')
  @ApiOperation({
    operationId: 'getWebhookEndpoint',
    summary: 'Read one webhook endpoint',
    description: 'Its settings and whether it is enabled; never its secret.',
  })
  @ENDPOINT_ID
  @ApiOkResponse({ type: WebhookEndpointResponseDto })
  @ApiProblems('NOT_FOUND', 'VALIDATION_ERROR')
  get(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string): Promise<WebhookEndpointResponseDto> {
    return this.endpoints.get(key.source, id);
  }

  @Patch(':id')
  @ApiOperation({
    operationId: 'updateWebhookEndpoint',
    summary: 'Change a webhook endpoint',
    description: `Any of url, description (null clears it), eventTypes and enabled. \`enabled: false\` stops deliveries (\`disabledReason: "client"\`); \`enabled: true\` resumes them and clears any \`disabledReason\`, except \`"admin"\`: an endpoint the gateway's operator stopped only they can enable, and its url cannot change, nor another endpoint's url become its url (409). ${URL_RULES}`,
  })
  @ENDPOINT_ID
  @ApiOkResponse({ type: WebhookEndpointResponseDto })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION', 'VALIDATION_ERROR')
  update(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string, @Body() body: UpdateWebhookEndpointDto): Promise<WebhookEndpointResponseDto> {
    return this.endpoints.update(key.source, id, body);
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({
    operationId: 'deleteWebhookEndpoint',
    summary: 'Delete a webhook endpoint',
    description: 'Its pending deliveries are dropped and its delivery log goes with it. One the gateway operator stopped stays until they lift the stop (409).',
  })
  @ENDPOINT_ID
  @ApiNoContentResponse({ description: 'Deleted' })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION', 'VALIDATION_ERROR')
  remove(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string): Promise<void> {
    return this.endpoints.remove(key.source, id);
  }

  @Post(':id/rotate-secret')
  @Idempotent()
  @HttpCode(200)
  @ApiOperation({
    operationId: 'rotateWebhookEndpointSecret',
    summary: "Rotate a webhook endpoint's signing secret",
    description:
      'The new secret is in this answer only. For OUTBOUND_WEBHOOKS_SECRET_GRACE_SECONDS (a day by default) every message carries a signature by the new and one by the previous secret. Takes no body.',
  })
  @ENDPOINT_ID
  @ApiOkResponse({ type: WebhookEndpointWithSecretDto })
  @ApiProblems('NOT_FOUND')
  rotateSecret(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string, @IdempotencyTransaction() tx: Transaction): Promise<WebhookEndpointWithSecretDto> {
    return this.endpoints.rotateSecret(tx, key.source, id);
  }

  @Get(':id/deliveries')
  @ApiOperation({
    operationId: 'listWebhookDeliveries',
    summary: "An endpoint's delivery log",
    description: 'Newest first, optionally by status. Pass `nextCursor` as `cursor` for the next page.',
  })
  @ENDPOINT_ID
  @ApiOkResponse({ type: DeliveryPageDto })
  @ApiProblems('NOT_FOUND', 'VALIDATION_ERROR')
  listDeliveries(@CurrentKey() key: AuthenticatedKey, @Param('id') id: string, @Query() query: ListDeliveriesQueryDto): Promise<DeliveryPageDto> {
    return this.deliveries.list(key.source, id, query);
  }

  @Post(':id/deliveries/:deliveryId/retry')
  @Idempotent()
  @HttpCode(202)
  @ApiOperation({
    operationId: 'retryWebhookDelivery',
    summary: 'Retry a delivery now',
    description:
      'A failed or pending delivery is attempted again at once, from the start of the retry schedule. 409 when it has succeeded or the endpoint is disabled. Takes no body.',
  })
  @ENDPOINT_ID
  @DELIVERY_ID
  @ApiAcceptedResponse({ type: DeliveryResponseDto })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION')
  retry(
    @CurrentKey() key: AuthenticatedKey,
    @Param('id') id: string,
    @Param('deliveryId') deliveryId: string,
    @IdempotencyTransaction() tx: Transaction,
  ): Promise<DeliveryResponseDto> {
    return this.deliveries.retry(tx, key.source, id, deliveryId);
  }
}

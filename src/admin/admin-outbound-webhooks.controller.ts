import { Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiParam, ApiProperty, ApiTags } from '@nestjs/swagger';
import { ApiProblems } from '../common/problem.dto';
import { ADMIN_TOKEN_SCHEME } from '../openapi/api-description';
import { AdminDeliveriesQueryDto, AdminDeliveryDto } from '../outbound-webhooks/dto/delivery.dto';
import { AdminWebhookEndpointDto } from '../outbound-webhooks/dto/webhook-endpoint.dto';
import { OutboundDeliveriesService } from '../outbound-webhooks/outbound-deliveries.service';
import { WebhookEndpointsService } from '../outbound-webhooks/webhook-endpoints.service';
import { AdminTokenGuard } from './admin-token.guard';
import { ListApiKeysQueryDto } from './dto/api-key.dto';

class AdminWebhookEndpointListDto {
  @ApiProperty({ type: [AdminWebhookEndpointDto] }) data: AdminWebhookEndpointDto[];
}

class AdminDeliveryListDto {
  @ApiProperty({ type: [AdminDeliveryDto] }) data: AdminDeliveryDto[];
}

/** Operators' view of push notifications: every source's endpoints (never a secret) and deliveries. */
@ApiTags('admin')
@ApiBearerAuth(ADMIN_TOKEN_SCHEME)
@ApiProblems('UNAUTHORIZED', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE', 'VALIDATION_ERROR')
@UseGuards(AdminTokenGuard)
@Controller('admin')
export class AdminOutboundWebhooksController {
  constructor(
    private readonly endpoints: WebhookEndpointsService,
    private readonly deliveries: OutboundDeliveriesService,
  ) {}

  @Get('webhook-endpoints')
  @ApiOperation({ operationId: 'listAllWebhookEndpoints', summary: 'List client webhook endpoints', description: 'Every source\'s endpoints, or those of one source, newest first (at most 500); never a secret.' })
  @ApiOkResponse({ type: AdminWebhookEndpointListDto })
  async listEndpoints(@Query() query: ListApiKeysQueryDto): Promise<AdminWebhookEndpointListDto> {
    return { data: await this.endpoints.listForAdmin(query.source) };
  }

  @Get('outbound-deliveries')
  @ApiOperation({ operationId: 'listOutboundDeliveries', summary: 'List push deliveries', description: 'Newest first, optionally of one source and with one status, with the URL of the endpoint each goes to.' })
  @ApiOkResponse({ type: AdminDeliveryListDto })
  async listDeliveries(@Query() query: AdminDeliveriesQueryDto): Promise<AdminDeliveryListDto> {
    return { data: await this.deliveries.listForAdmin(query) };
  }

  @Post('outbound-deliveries/:id/retry')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'retryOutboundDelivery',
    summary: 'Retry a push delivery now',
    description: 'A failed or pending delivery of any source is attempted again at once, from the start of the retry schedule. 409 when it has succeeded or its endpoint is disabled. Takes no body.',
  })
  @ApiParam({ name: 'id', description: "The delivery's id", example: '1017' })
  @ApiAcceptedResponse({ type: AdminDeliveryDto })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION')
  retry(@Param('id') id: string): Promise<AdminDeliveryDto> {
    return this.deliveries.retryForAdmin(id);
  }
}

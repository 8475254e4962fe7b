import { Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { ApiProblems } from '../common/problem.dto';
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
@ApiBearerAuth()
@ApiProblems('UNAUTHORIZED', 'RATE_LIMITED', 'VALIDATION_ERROR')
@UseGuards(AdminTokenGuard)
@Controller('admin')
export class AdminOutboundWebhooksController {
  constructor(
    private readonly endpoints: WebhookEndpointsService,
    private readonly deliveries: OutboundDeliveriesService,
  ) {}

  @Get('webhook-endpoints')
  @ApiOperation({ summary: "Client webhook endpoints, newest first, optionally of one source (at most 500)" })
  @ApiOkResponse({ type: AdminWebhookEndpointListDto })
  async listEndpoints(@Query() query: ListApiKeysQueryDto): Promise<AdminWebhookEndpointListDto> {
    return { data: await this.endpoints.listForAdmin(query.source) };
  }

  @Get('outbound-deliveries')
  @ApiOperation({ summary: 'Push deliveries, newest first, optionally by source and status' })
  @ApiOkResponse({ type: AdminDeliveryListDto })
  async listDeliveries(@Query() query: AdminDeliveriesQueryDto): Promise<AdminDeliveryListDto> {
    return { data: await this.deliveries.listForAdmin(query) };
  }

  @Post('outbound-deliveries/:id/retry')
  @HttpCode(202)
  @ApiOperation({ summary: 'Attempt a failed or pending delivery again now, with a fresh retry schedule' })
  @ApiAcceptedResponse({ type: AdminDeliveryDto })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION')
  retry(@Param('id') id: string): Promise<AdminDeliveryDto> {
    return this.deliveries.retryForAdmin(id);
  }
}

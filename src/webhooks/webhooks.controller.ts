import { Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiProblems } from '../common/problem.dto';
import { WebhookEventsService } from './webhook-events.service';
import { BANK_WEBHOOK_PATH } from './webhook-signature';
import { SignedDelivery, WebhookSignaturePipe } from './webhook-signature.pipe';
import type { VerifiedDelivery } from './webhook-signature.pipe';

@ApiTags('webhooks')
@Controller()
export class WebhooksController {
  constructor(private readonly events: WebhookEventsService) {}

  @Post(BANK_WEBHOOK_PATH)
  @HttpCode(200)
  @ApiOperation({ summary: 'Payment status changes from the bank, signed with HMAC-SHA256' })
  @ApiHeader({ name: 'X-Provider-Timestamp', required: true, example: '2026-11-21T10:15:30.123Z' })
  @ApiHeader({ name: 'X-Provider-Signature', required: true, description: 'hex HMAC-SHA256 of `<timestamp>.<raw body>`' })
  @ApiBody({
    schema: {
      type: 'object',
      required: ['eventId', 'eventType', 'status', 'providerReference'],
      properties: {
        eventId: { type: 'string', example: 'evt_000123', maxLength: 255 },
        eventType: { type: 'string', example: 'PAYMENT_STATUS', maxLength: 255 },
        status: { type: 'string', example: 'PAID', maxLength: 255 },
        providerReference: { type: 'string', example: 'PAY-2026-0001', maxLength: 255 },
      },
    },
  })
  @ApiOkResponse({ schema: { type: 'object', properties: { received: { type: 'boolean', example: true } } } })
  @ApiProblems('WEBHOOK_SIGNATURE_INVALID', 'VALIDATION_ERROR', 'SERVICE_UNAVAILABLE')
  async receive(@SignedDelivery(WebhookSignaturePipe) delivery: VerifiedDelivery): Promise<{ received: true }> {
    await this.events.receive(delivery);
    return { received: true };
  }
}

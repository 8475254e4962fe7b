import { Controller, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { TEXT_PATTERN } from '../common/json-body-parser.js';
import { ApiProblems } from '../common/problem.dto.js';
import { PROVIDER_STATUSES } from '../documents/lifecycle.js';
import { PAYMENT_STATUS_EVENT } from '../documents/bank-event.entity.js';
import { PaymentsService } from '../documents/payments.service.js';
import { BANK_WEBHOOK_PATH, SIGNATURE_PATTERN, TIMESTAMP_PATTERN } from './webhook-signature.js';
import { MAX_FIELD_LENGTH, PAYLOAD_FIELDS, SignedDelivery, WebhookSignaturePipe } from './webhook-signature.pipe.js';
import type { VerifiedDelivery } from './webhook-signature.pipe.js';

const FIELD_EXAMPLES: Record<(typeof PAYLOAD_FIELDS)[number], { example: string; description: string }> = {
  eventId: { example: 'evt_000123', description: 'Unique per event; a repeated eventId is acknowledged and changes nothing' },
  eventType: { example: PAYMENT_STATUS_EVENT, description: `Only \`${PAYMENT_STATUS_EVENT}\` is applied; other types are recorded and acknowledged` },
  status: {
    example: 'PAID',
    description:
      `Compared case-insensitively: ${PROVIDER_STATUSES.map((s) => `\`${s}\``).join(', ')}. PENDING and PROCESSING are recorded as the payment status; ` +
      'PAID, FAILED and REFUNDED move the document to PAID, PAYMENT_FAILED and REFUNDED where its lifecycle allows. ' +
      'Any other value, or a transition the lifecycle does not allow (late, out of order), is recorded and acknowledged and changes nothing.',
  },
  providerReference: {
    example: 'PAY-2026-0001',
    description: "The document's providerReference; an event for none yet is kept and applied when that document is created",
  },
};

const SIGNING = `**Signature.** \`X-Provider-Signature\` is the HMAC-SHA256, hex-encoded (either case), of the UTF-8 string
\`<X-Provider-Timestamp>.\` followed by the raw body bytes exactly as sent, keyed with the shared secret
\`BANK_WEBHOOK_SECRET\`. During a rotation a signature made with \`BANK_WEBHOOK_SECRET_PREVIOUS\` is accepted too, so
the bank can switch secrets without a gap. \`X-Provider-Timestamp\` is the signing time as exactly
\`YYYY-MM-DDTHH:mm:ss.sssZ\` (UTC, milliseconds) and must be within ± \`WEBHOOK_TOLERANCE_SECONDS\` (default 300) of the
gateway's clock. All of this is checked in constant time before the body is read: a missing header, a malformed or
stale timestamp or a wrong signature is a 401 \`WEBHOOK_SIGNATURE_INVALID\`, whatever the body; without a configured
secret every delivery is a 401. The body is then parsed: not a JSON object with the four fields as non-empty strings
of at most ${MAX_FIELD_LENGTH} characters is a 422 naming each bad field. Nothing is stored for a 401 or a 422.

**Acknowledgement.** \`200 {"received": true}\` is sent only once the delivery is stored and applied in one
transaction. Each delivery has one outcome (see \`GET /admin/webhook-events\`): \`applied\`; \`ignored\` (another
\`eventType\`, an unknown status, or a transition the lifecycle does not allow); \`duplicate\` (an \`eventId\` seen
before); \`unmatched\` (no document has the \`providerReference\` yet; applied when one is created); \`ambiguous\`
(documents of several sources have the \`providerReference\`: applied to none until an administrator applies it to one). Retry anything
that is not a 200: every retry of one \`eventId\` is applied at most once.

Signing with openssl: \`printf '%s' "$TS.$BODY" | openssl dgst -sha256 -hmac "$SECRET"\`.`;

@ApiTags('webhooks')
@Controller()
export class WebhooksController {
  constructor(private readonly payments: PaymentsService) {}

  @Post(BANK_WEBHOOK_PATH)
  @HttpCode(200)
  @ApiOperation({ operationId: 'receiveBankWebhook', summary: 'Receive a payment status change from the bank', description: SIGNING })
  @ApiHeader({
    name: 'X-Provider-Timestamp',
    required: true,
    description: 'When the bank signed the delivery, UTC with milliseconds; within ± WEBHOOK_TOLERANCE_SECONDS of the server clock',
    schema: { type: 'string', pattern: TIMESTAMP_PATTERN.source, example: '2026-11-21T10:15:30.123Z' },
  })
  @ApiHeader({
    name: 'X-Provider-Signature',
    required: true,
    description: 'Hex HMAC-SHA256 of `<X-Provider-Timestamp>.<raw body>` with BANK_WEBHOOK_SECRET (or, during a rotation, BANK_WEBHOOK_SECRET_PREVIOUS)',
    schema: { type: 'string', pattern: SIGNATURE_PATTERN.source, example: '5f2b0c3d9e8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c' },
  })
  @ApiBody({
    description: 'Any media type is read as JSON; fields beyond these four are allowed and kept with the delivery',
    schema: {
      type: 'object',
      required: [...PAYLOAD_FIELDS],
      additionalProperties: true,
      properties: Object.fromEntries(
        PAYLOAD_FIELDS.map((field) => [field, { type: 'string', minLength: 1, maxLength: MAX_FIELD_LENGTH, pattern: TEXT_PATTERN, ...FIELD_EXAMPLES[field] }]),
      ),
    },
  })
  @ApiOkResponse({
    description: 'Stored and applied (or recorded: see the outcomes)',
    schema: { type: 'object', required: ['received'], properties: { received: { type: 'boolean', enum: [true], example: true } } },
  })
  @ApiProblems('WEBHOOK_SIGNATURE_INVALID', 'VALIDATION_ERROR', 'SERVICE_UNAVAILABLE')
  async receive(@SignedDelivery(WebhookSignaturePipe) { payload, rawBody, signedAt }: VerifiedDelivery): Promise<{ received: true }> {
    await this.payments.receive({ ...payload, rawBody, signedAt });
    return { received: true };
  }
}

import { createParamDecorator, ExecutionContext, Injectable, Logger, OnModuleInit, PipeTransform } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error.js';
import { mediaTypeRefusal } from '../common/http-hooks.js';
import { findDuplicateKey, unstorableText } from '../common/json-body-parser.js';
import { FieldError } from '../common/error-codes.js';
import { AppConfig } from '../config/app-config.js';
import { SignatureVerdict, SignedRequest, verifyWebhookSignature } from './webhook-signature.js';

export interface PaymentStatusPayload {
  eventId: string;
  eventType: string;
  status: string;
  providerReference: string;
}

export interface VerifiedDelivery {
  payload: PaymentStatusPayload;
  rawBody: Buffer;
  signedAt: Date;
}

/** A delivery as received, before its signature is checked: the signed parts untouched (headers and raw body bytes), and its media type. */
export interface UnverifiedDelivery extends SignedRequest {
  mediaType: Pick<FastifyRequest['headers'], 'content-type' | 'content-encoding'>;
}

export const SignedDelivery = createParamDecorator((_data: unknown, ctx: ExecutionContext): UnverifiedDelivery => {
  const request = ctx.switchToHttp().getRequest<FastifyRequest>();
  return {
    timestamp: request.headers['x-provider-timestamp'],
    signature: request.headers['x-provider-signature'],
    rawBody: request.rawBody ?? Buffer.alloc(0),
    mediaType: { 'content-type': request.headers['content-type'], 'content-encoding': request.headers['content-encoding'] },
  };
});

const UTF8 = new TextDecoder('utf-8', { fatal: true });

const DETAILS: Record<Exclude<SignatureVerdict, { valid: true }>['reason'], string> = {
  not_configured: 'The webhook signature could not be verified',
  missing_header: 'X-Provider-Timestamp and X-Provider-Signature are required',
  malformed_timestamp: 'X-Provider-Timestamp must be an ISO 8601 UTC time with milliseconds, e.g. 2026-11-21T10:15:30.123Z',
  outside_window: 'X-Provider-Timestamp is outside the accepted time window',
  mismatch: 'The webhook signature could not be verified',
};

export const PAYLOAD_FIELDS = ['eventId', 'eventType', 'status', 'providerReference'] as const;
export const MAX_FIELD_LENGTH = 255;

/** The body as the spec shapes it (§2.1): an object with four non-empty strings; extra fields are kept, not read. */
function parsePayload(rawBody: Buffer): PaymentStatusPayload {
  let text: string;
  try {
    text = UTF8.decode(rawBody);
  } catch {
    throw AppError.validation([{ field: 'body', message: 'is not valid UTF-8' }], 'The webhook body is malformed');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw AppError.validation([{ field: 'body', message: 'is not valid JSON' }], 'The webhook body is malformed');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw AppError.validation([{ field: 'body', message: 'must be a JSON object' }], 'The webhook body is malformed');
  }
  const duplicate = findDuplicateKey(text);
  if (duplicate) throw AppError.validation([duplicate], 'The webhook body is malformed');
  const errors: FieldError[] = [];
  for (const field of PAYLOAD_FIELDS) {
    const v = (value as Record<string, unknown>)[field];
    if (typeof v !== 'string' || v.length === 0 || v.length > MAX_FIELD_LENGTH) {
      errors.push({ field, message: `must be a non-empty string of at most ${MAX_FIELD_LENGTH} characters` });
      continue;
    }
    // Stored as text: an unpaired surrogate would become U+FFFD, and two eventIds one event.
    const unstorable = unstorableText(v);
    if (unstorable) errors.push({ field, message: unstorable });
  }
  if (errors.length) throw AppError.validation(errors, 'The webhook body is malformed');
  return Object.fromEntries(PAYLOAD_FIELDS.map((f) => [f, (value as Record<string, string>)[f]])) as unknown as PaymentStatusPayload;
}

/**
 * Verifies a bank delivery before anything looks at its body: signature (current or previous secret,
 * constant-time), timestamp form and window. Only then are its media type (415) and body (422) checked,
 * so unsigned garbage of any type stays a 401.
 */
@Injectable()
export class WebhookSignaturePipe implements PipeTransform<UnverifiedDelivery, VerifiedDelivery>, OnModuleInit {
  private readonly logger = new Logger('Webhooks');
  private readonly secrets: string[];

  constructor(private readonly config: AppConfig) {
    this.secrets = [config.BANK_WEBHOOK_SECRET, config.BANK_WEBHOOK_SECRET_PREVIOUS].filter((s): s is string => Boolean(s));
  }

  onModuleInit(): void {
    if (!this.config.BANK_WEBHOOK_SECRET) this.logger.warn('BANK_WEBHOOK_SECRET is not set: every bank webhook will be rejected with 401');
  }

  transform(delivery: UnverifiedDelivery): VerifiedDelivery {
    const verdict = verifyWebhookSignature(delivery, this.secrets, this.config.WEBHOOK_TOLERANCE_SECONDS);
    if (!verdict.valid) throw new AppError('WEBHOOK_SIGNATURE_INVALID', DETAILS[verdict.reason]);
    const refusal = mediaTypeRefusal(delivery.mediaType);
    if (refusal) throw refusal;
    return { payload: parsePayload(delivery.rawBody), rawBody: delivery.rawBody, signedAt: new Date(delivery.timestamp as string) };
  }
}

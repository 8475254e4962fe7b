import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { GatewayWebhookVerificationError } from './errors';
import type { WebhookMessage } from './types';

/** A fetch `Headers`, or Node's `IncomingMessage.headers` (any header name case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * Checks a pushed message as Standard Webhooks defines it (HMAC-SHA256 of `id.timestamp.body` with the
 * endpoint's `whsec_` secret, a timestamp within 5 minutes) and returns its parsed body. Throws
 * `GatewayWebhookVerificationError` for a message that does not verify.
 *
 * `rawBody` must be the bytes as they arrived: JSON parsed and serialised again is not what was signed.
 * Deliveries are at least once: de-duplicate on the `webhook-id` header (the feed event's id).
 */
export function verifyWebhook(headers: WebhookHeaders, rawBody: string | Uint8Array, secret: string): WebhookMessage {
  // Built first and outside the try: a malformed secret is a configuration error, not a bad message.
  const webhook = new Webhook(secret);
  // standardwebhooks takes a string or a Node Buffer, nothing else.
  const body = typeof rawBody === 'string' ? rawBody : new TextDecoder().decode(rawBody);
  try {
    return webhook.verify(body, plainHeaders(headers)) as WebhookMessage;
  } catch (error) {
    if (error instanceof WebhookVerificationError) throw new GatewayWebhookVerificationError(`push notification not verified: ${error.message}`, error);
    throw error;
  }
}

export const webhooks = { verify: verifyWebhook };

function plainHeaders(headers: WebhookHeaders): Record<string, string> {
  const plain: Record<string, string> = {};
  if (typeof headers.get === 'function' && typeof headers.forEach === 'function') {
    (headers as Headers).forEach((value, name) => (plain[name.toLowerCase()] = value));
    return plain;
  }
  for (const [name, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (value !== undefined) plain[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return plain;
}

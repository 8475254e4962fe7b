import { createHmac, timingSafeEqual } from 'node:crypto';

export const BANK_WEBHOOK_PATH = '/api/webhooks/payments/bank';

/** Exactly `YYYY-MM-DDTHH:mm:ss.sssZ`, as the specification fixes it. */
export const TIMESTAMP_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const SIGNATURE_PATTERN = /^[0-9a-fA-F]{64}$/;

export type SignatureVerdict =
  { valid: true } | { valid: false; reason: 'not_configured' | 'missing_header' | 'malformed_timestamp' | 'outside_window' | 'mismatch' };

export interface SignedRequest {
  timestamp: unknown;
  signature: unknown;
  rawBody: Buffer;
}

/** HMAC-SHA256 over `<timestamp>.<raw body>`, hex: what the bank sends in X-Provider-Signature. */
export function signWebhook(secret: string, timestamp: string, rawBody: Buffer | string): string {
  return createHmac('sha256', secret).update(`${timestamp}.`, 'utf8').update(rawBody).digest('hex');
}

/**
 * Checks a delivery against every accepted secret (the current one and, during a rotation, the
 * previous one). Pure: the clock is passed in.
 */
export function verifyWebhookSignature(
  request: SignedRequest,
  secrets: readonly string[],
  toleranceSeconds: number,
  now: number = Date.now(),
): SignatureVerdict {
  if (secrets.length === 0) return { valid: false, reason: 'not_configured' };
  const { timestamp, signature, rawBody } = request;
  if (typeof timestamp !== 'string' || typeof signature !== 'string' || !timestamp || !signature) {
    return { valid: false, reason: 'missing_header' };
  }
  const sentAt = Date.parse(timestamp);
  // The round trip rejects dates that match the pattern but do not exist (2026-02-30).
  if (!TIMESTAMP_PATTERN.test(timestamp) || Number.isNaN(sentAt) || new Date(sentAt).toISOString() !== timestamp) {
    return { valid: false, reason: 'malformed_timestamp' };
  }
  if (Math.abs(now - sentAt) > toleranceSeconds * 1000) return { valid: false, reason: 'outside_window' };
  if (!SIGNATURE_PATTERN.test(signature)) return { valid: false, reason: 'mismatch' };
  const presented = Buffer.from(signature, 'hex');
  // Every secret is compared, whichever matches, so timing does not tell which one did.
  const matches = secrets.map((secret) => timingSafeEqual(Buffer.from(signWebhook(secret, timestamp, rawBody), 'hex'), presented));
  return matches.includes(true) ? { valid: true } : { valid: false, reason: 'mismatch' };
}

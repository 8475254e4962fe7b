import { createHmac, randomBytes } from 'node:crypto';

const SECRET_PREFIX = 'whsec_';

/** A Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes (256 bits, the HMAC-SHA256 block's worth). */
export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` keyed with the secret's decoded bytes (Standard Webhooks). */
export function sign(secret: string, messageId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestamp}.${body}`).digest('base64')}`;
}

/** The `webhook-*` headers of one attempt; during a rotation grace period one signature per live secret. */
export function signedHeaders(secrets: string[], messageId: string, timestamp: number, body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => sign(secret, messageId, timestamp, body)).join(' '),
  };
}

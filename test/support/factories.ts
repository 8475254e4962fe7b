import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import { BANK_WEBHOOK_PATH, signWebhook } from '../../src/webhooks/webhook-signature.js';
import { waitFor } from './processes.js';
import { TEST_ADMIN_TOKEN } from './test-app.js';

export const adminHeaders = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };

export interface IssuedKey {
  id: string;
  source: string;
  key: string;
}

export function uniqueSource(prefix = 'src'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** Issues a key through the admin API, as an administrator would. */
export async function newSourceWithKey(app: NestFastifyApplication, source = uniqueSource(), extra: Record<string, unknown> = {}): Promise<IssuedKey> {
  const res = await app.inject({ method: 'POST', url: '/admin/api-keys', headers: adminHeaders, payload: { source, ...extra } });
  if (res.statusCode !== 201) throw new Error(`issuing a key failed: ${res.statusCode} ${res.body}`);
  const body = res.json();
  return { id: body.id, source, key: body.key };
}

let sequence = 0;

/** A valid document body for `source`; every call gets its own externalId. */
export function documentBody(source: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  sequence += 1;
  return {
    source,
    externalId: `INV-${Date.now()}-${sequence}`,
    type: 'INVOICE',
    taxpayer: { taxId: 'DE123456789', name: 'Muster GmbH', country: 'DE' },
    issueDate: '2026-11-20',
    currency: 'EUR',
    totalAmount: '119.00',
    taxAmount: '19.00',
    ...overrides,
  };
}

export function newIdempotencyKey(): string {
  return `idem-${randomBytes(12).toString('hex')}`;
}

export function postDocument(app: NestFastifyApplication, key: string, body: unknown, idempotencyKey: string | null = newIdempotencyKey()) {
  const headers: Record<string, string> = { 'x-api-key': key, 'content-type': 'application/json' };
  if (idempotencyKey !== null) headers['x-idempotency-key'] = idempotencyKey;
  return app.inject({ method: 'POST', url: '/api/v1/documents', headers, payload: typeof body === 'string' ? body : JSON.stringify(body) });
}

export function cancelDocument(app: NestFastifyApplication, key: string, id: string, idempotencyKey: string | null = newIdempotencyKey()) {
  const headers: Record<string, string> = { 'x-api-key': key };
  if (idempotencyKey !== null) headers['x-idempotency-key'] = idempotencyKey;
  return app.inject({ method: 'POST', url: `/api/v1/documents/${id}/cancel`, headers });
}

/** A delivery signed as the bank signs it: HMAC-SHA256 of `<timestamp>.<raw body>`, hex. */
export function signedWebhook(secret: string, body: unknown, timestamp = new Date().toISOString()) {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  return {
    raw,
    headers: {
      'content-type': 'application/json',
      'x-provider-timestamp': timestamp,
      'x-provider-signature': signWebhook(secret, timestamp, raw),
    } as Record<string, string>,
  };
}

export function sendWebhook(app: NestFastifyApplication, delivery: { raw: string | Buffer; headers: Record<string, string> }) {
  return app.inject({ method: 'POST', url: BANK_WEBHOOK_PATH, headers: delivery.headers, payload: delivery.raw });
}

/** An event of the feed as `GET /api/v1/events` answers it. */
export interface FeedEvent {
  id: string;
  type: string;
  documentId: string;
  status: string;
  previousStatus: string | null;
  createdAt: string;
}

/**
 * The source's feed (its first 100 events) once `ready` finds in it what the test waits for. The feed shows
 * an event only once every older writing transaction on the server has ended, whatever its database (another
 * test file's, say), so a test that has just written waits, up to 45 s.
 */
export function feedOnceReady<T>(app: NestFastifyApplication, key: string, ready: (events: FeedEvent[]) => T | undefined | false, what: string): Promise<T> {
  return waitFor(
    async () => ready((await app.inject({ method: 'GET', url: '/api/v1/events?limit=100', headers: { 'x-api-key': key } })).json().data),
    what,
    45_000,
  );
}

import { Webhook } from 'standardwebhooks';
import { GatewayWebhookVerificationError } from './errors';
import { verifyWebhook } from './webhooks';

describe('verifyWebhook', () => {
  const secret = `whsec_${Buffer.from('a secret of at least twenty-four bytes').toString('base64')}`;
  const rawBody = JSON.stringify({
    type: 'document.created',
    timestamp: '2026-11-25T10:00:00.000Z',
    data: {
      id: '42',
      type: 'document.created',
      documentId: '2b0f4c1e-0000-4000-8000-000000000001',
      status: 'PENDING_PAYMENT',
      previousStatus: null,
      createdAt: '2026-11-25T10:00:00.000Z',
    },
  });
  const signedHeaders = (at = new Date(), body = rawBody, key = secret) => ({
    'webhook-id': '42',
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(key).sign('42', at, body),
  });

  it('returns the parsed message, whether the headers come from Node or fetch and the body as text or bytes', () => {
    const headers = signedHeaders();
    const nodeHeaders = {
      'Webhook-Id': headers['webhook-id'],
      'webhook-timestamp': [headers['webhook-timestamp']],
      'webhook-signature': headers['webhook-signature'],
      host: undefined,
    };
    for (const [h, body] of [
      [headers, rawBody],
      [nodeHeaders, Buffer.from(rawBody)],
      [new Headers(headers), new TextEncoder().encode(rawBody)],
    ] as const) {
      expect(verifyWebhook(h, body, secret)).toEqual(JSON.parse(rawBody));
    }
  });

  it('accepts a message signed by one of several secrets (during a rotation)', () => {
    const previous = `whsec_${Buffer.from('the previous secret, also long enough').toString('base64')}`;
    const headers = signedHeaders(new Date(), rawBody, previous);
    headers['webhook-signature'] = `${signedHeaders()['webhook-signature']} ${headers['webhook-signature']}`;
    expect(verifyWebhook(headers, rawBody, previous).data.id).toBe('42');
  });

  const refused: Array<[string, () => Parameters<typeof verifyWebhook>]> = [
    ['a changed body', () => [signedHeaders(), rawBody.replace('PENDING_PAYMENT', 'PAID'), secret]],
    ['another secret', () => [signedHeaders(), rawBody, `whsec_${Buffer.from('not the endpoint secret at all').toString('base64')}`]],
    ['an old timestamp', () => [signedHeaders(new Date(Date.now() - 10 * 60_000)), rawBody, secret]],
    ['a missing signature', () => [{ ...signedHeaders(), 'webhook-signature': undefined }, rawBody, secret]],
  ];
  it.each(refused)('refuses %s with GatewayWebhookVerificationError', (_case, args) => {
    expect(() => verifyWebhook(...args())).toThrow(GatewayWebhookVerificationError);
  });
});

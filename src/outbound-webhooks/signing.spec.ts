import { Webhook } from 'standardwebhooks';
import { generateSecret, signedHeaders } from './signing.js';

describe('Standard Webhooks signing', () => {
  const body = JSON.stringify({ type: 'document.created', timestamp: '2026-11-22T10:15:30.123Z', data: { id: '42' } });
  const now = Math.floor(Date.now() / 1000);

  it('is verified by the reference implementation', () => {
    const secret = generateSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, signedHeaders([secret], '42', now, body))).toEqual(JSON.parse(body));
  });

  it('carries one signature per secret, each verifiable on its own', () => {
    const [current, previous] = [generateSecret(), generateSecret()];
    const headers = signedHeaders([current, previous], '42', now, body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(current).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(previous).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(generateSecret()).verify(body, headers)).toThrow();
  });

  it('binds the id, the timestamp and the body', () => {
    const secret = generateSecret();
    const headers = signedHeaders([secret], '42', now, body);
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': '43' })).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-timestamp': String(now + 1) })).toThrow();
  });
});

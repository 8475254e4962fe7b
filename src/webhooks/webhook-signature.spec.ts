import { signWebhook, verifyWebhookSignature } from './webhook-signature.js';

const SECRET = 'bank-secret-0123456789abcdef';
const NOW = Date.parse('2026-11-21T10:15:30.123Z');
const TIMESTAMP = '2026-11-21T10:15:30.123Z';
const BODY = Buffer.from('{"eventId":"e1","eventType":"PAYMENT_STATUS","status":"PAID","providerReference":"P1"}');

const verify = (overrides: Partial<{ timestamp: unknown; signature: unknown; rawBody: Buffer }> = {}, secrets = [SECRET], now = NOW) =>
  verifyWebhookSignature({ timestamp: TIMESTAMP, signature: signWebhook(SECRET, TIMESTAMP, BODY), rawBody: BODY, ...overrides }, secrets, 300, now);

describe('verifyWebhookSignature', () => {
  it('signs `<timestamp>.<raw body>` with HMAC-SHA256 as hex, as openssl does', () => {
    // printf '%s' '2026-11-21T10:15:30.123Z.{}' | openssl dgst -sha256 -hmac 'bank-secret-0123456789abcdef'
    expect(signWebhook(SECRET, TIMESTAMP, '{}')).toBe('80fd398ed1942cb7c4926d7cb3dbde4c7218a600e40358fc0c2b56d96d7f2d81');
    expect(signWebhook(SECRET, TIMESTAMP, BODY)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('accepts the signature in lower or upper case, and with the previous secret', () => {
    expect(verify()).toEqual({ valid: true });
    expect(verify({ signature: signWebhook(SECRET, TIMESTAMP, BODY).toUpperCase() })).toEqual({ valid: true });
    expect(verify({ signature: signWebhook('old-secret-0123456789abcdef', TIMESTAMP, BODY) }, [SECRET, 'old-secret-0123456789abcdef'])).toEqual({
      valid: true,
    });
  });

  it.each<[string, Parameters<typeof verify>, string]>([
    ['no secret configured', [{}, []], 'not_configured'],
    ['no timestamp', [{ timestamp: undefined }], 'missing_header'],
    ['no signature', [{ signature: '' }], 'missing_header'],
    ['repeated headers', [{ signature: ['a', 'b'] }], 'missing_header'],
    ['seconds without milliseconds', [{ timestamp: '2026-11-21T10:15:30Z' }], 'malformed_timestamp'],
    ['an offset instead of Z', [{ timestamp: '2026-11-21T10:15:30.123+00:00' }], 'malformed_timestamp'],
    ['a day that does not exist', [{ timestamp: '2026-02-30T10:15:30.123Z' }], 'malformed_timestamp'],
    ['301 s early', [{}, [SECRET], NOW + 301_000], 'outside_window'],
    ['301 s late', [{}, [SECRET], NOW - 301_000], 'outside_window'],
    ['another body', [{ rawBody: Buffer.from(BODY.toString().replace('PAID', 'PAIC')) }], 'mismatch'],
    ['non-hex signature', [{ signature: 'z'.repeat(64) }], 'mismatch'],
    ['a short signature', [{ signature: 'ab' }], 'mismatch'],
    ['a signature over another timestamp', [{ signature: signWebhook(SECRET, '2026-11-21T10:15:30.124Z', BODY) }], 'mismatch'],
  ])('refuses %s', (_name, args, reason) => {
    expect(verify(...args)).toEqual({ valid: false, reason });
  });

  it('accepts the window edges', () => {
    expect(verify({}, [SECRET], NOW + 300_000)).toEqual({ valid: true });
    expect(verify({}, [SECRET], NOW - 300_000)).toEqual({ valid: true });
  });
});

import { secretCheck, urlRedactor } from './redact-url.js';

const ADMIN = 'correct horse battery staple';
const redactUrl = urlRedactor([ADMIN, 'metrics-token-42']);
const key = 'sk_tax_' + 'A1b2C3d4'.repeat(5);
const HEX = '0123456789abcdef'.repeat(4);

describe('urlRedactor', () => {
  it('redacts the values of parameters named like secrets, and of values shaped like the gateway\u2019s keys and tokens', () => {
    expect(redactUrl(`/api/v1/me?api_key=${key}`)).toBe('/api/v1/me?api_key=[redacted]');
    expect(redactUrl(`/api/v1/me?k=${key}&limit=5`)).toBe('/api/v1/me?k=[redacted]&limit=5');
    expect(redactUrl('/admin/me?token=adm_tax_x&access_token=abc&SIGNATURE=ff')).toBe(
      '/admin/me?token=[redacted]&access_token=[redacted]&SIGNATURE=[redacted]',
    );
    expect(redactUrl(`/x?q=${encodeURIComponent('whsec_abc')}`)).toBe('/x?q=[redacted]');
  });

  it.each([
    ['in the path', `/nope/${key}`, '/nope/[redacted]'],
    ['in the path, percent-encoded', `/nope/${encodeURIComponent(key).replace('_', '%5F')}/x`, '/nope/[redacted]/x'],
    ['in the middle of a segment', `/nope/x-${key}`, '/nope/[redacted]'],
    ['after a semicolon', `/api/v1/me;${key}`, '/api/v1/me;[redacted]'],
    ['as a matrix parameter named like a secret', '/api/v1/me;jsessionid=abc123', '/api/v1/me;jsessionid=[redacted]'],
    ['as a bare parameter', `/api/v1/me?${key}`, '/api/v1/me?[redacted]'],
    ['as a parameter name', `/api/v1/me?${key}=1&limit=5`, '/api/v1/me?[redacted]=1&limit=5'],
    ['under a percent-encoded name', '/api/v1/me?api%5Fkey=short&%61uth=x', '/api/v1/me?api%5Fkey=[redacted]&%61uth=[redacted]'],
    ['a long opaque value of any name', `/x?q=${'Z'.repeat(40)}`, '/x?q=[redacted]'],
    ['the ADMIN_TOKEN in the path', `/admin/${encodeURIComponent(ADMIN)}`, '/admin/[redacted]'],
    ['the ADMIN_TOKEN as a bare parameter, + for spaces', `/admin/me?${ADMIN.replace(/ /g, '+')}`, '/admin/me?[redacted]'],
    ['the ADMIN_TOKEN inside a value', `/admin/me?q=x${encodeURIComponent(ADMIN)}y`, '/admin/me?q=[redacted]'],
    ['another configured secret as a parameter name', '/metrics?metrics-token-42', '/metrics?[redacted]'],
    ['after a malformed escape', `/admin/me?q=%zz${encodeURIComponent(ADMIN)}`, '/admin/me?q=[redacted]'],
    ['beside a lone byte of a character', `/nope/%E0${encodeURIComponent(key).replace(/_/g, '%5F')}`, '/nope/[redacted]'],
    ['encoded twice', `/admin/me?q=${encodeURIComponent(encodeURIComponent(ADMIN))}`, '/admin/me?q=[redacted]'],
    ['a console session token', `/admin/me?q=tdgs_${'x'.repeat(10)}`, '/admin/me?q=[redacted]'],
    ['a CSRF token followed by a quote', `/admin/me;${'Ab_-'.repeat(11)}"`, '/admin/me;[redacted]'],
    ...['!', ',', '%20', '"', '@', '%0a', '%250a'].map((after) => [
      `a 64-hex signature followed by ${after}`,
      `/x/${HEX}${after}?sig=a${HEX}${after}`,
      '/x/[redacted]?sig=[redacted]',
    ]),
  ])('redacts a secret %s', (_where, url, logged) => {
    expect(redactUrl(url)).toBe(logged);
  });

  it('leaves nothing of a URL in which a configured secret spans several parts', () => {
    const spanning = urlRedactor(['abc/def&ghi=jkl']);
    expect(spanning('/x/abc/def&ghi=jkl')).toBe('[redacted]');
    expect(spanning(`/x?q=${encodeURIComponent('abc/def&ghi=jkl')}`)).toBe('/x?q=[redacted]');
  });

  it('keeps paths, ids, ordinary parameters and cursors of normal length as they are', () => {
    expect(redactUrl('/api/v1/documents/2b0f4c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f')).toBe('/api/v1/documents/2b0f4c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f');
    expect(redactUrl('/admin/documents?documentId=2B0F4C1E-7D3A-4F5B-9C8E-1A2B3C4D5E6F')).toBe(
      '/admin/documents?documentId=2B0F4C1E-7D3A-4F5B-9C8E-1A2B3C4D5E6F',
    );
    expect(redactUrl('/api/v1/documents?status=PAID&limit=20&cursor=ZDoxMjM')).toBe('/api/v1/documents?status=PAID&limit=20&cursor=ZDoxMjM');
    expect(redactUrl('/x?flag&y=%E0%A4%A')).toBe('/x?flag&y=%E0%A4%A');
    expect(redactUrl('/')).toBe('/');
  });
});

describe('secretCheck', () => {
  const looksSecret = secretCheck([ADMIN]);

  it.each([key, `tdgs_abc`, HEX, `${HEX}:1`, 'Ab_-'.repeat(11), `x${ADMIN}y`, `req.${'Z'.repeat(32)}`])('finds %s secret-like', (text) => {
    expect(looksSecret(text)).toBe(true);
  });

  it.each(['trace-42', '2b0f4c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f', '2b0f4c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f:retry-2', 'batch:2026-12-02.7'])(
    'leaves %s alone',
    (text) => {
      expect(looksSecret(text)).toBe(false);
    },
  );
});

import { redactUrl } from './redact-url';

describe('redactUrl', () => {
  it('redacts the values of parameters named like secrets, and of values shaped like the gateway\u2019s keys and tokens', () => {
    const key = 'sk_tax_' + 'A1b2C3d4'.repeat(5);
    expect(redactUrl(`/api/v1/me?api_key=${key}`)).toBe('/api/v1/me?api_key=[redacted]');
    expect(redactUrl(`/api/v1/me?k=${key}&limit=5`)).toBe('/api/v1/me?k=[redacted]&limit=5');
    expect(redactUrl('/admin/me?token=adm_tax_x&access_token=abc&SIGNATURE=ff')).toBe('/admin/me?token=[redacted]&access_token=[redacted]&SIGNATURE=[redacted]');
    expect(redactUrl(`/x?q=${encodeURIComponent('whsec_abc')}`)).toBe('/x?q=[redacted]');
  });

  it('keeps paths, ordinary parameters and cursors of normal length as they are', () => {
    expect(redactUrl('/api/v1/documents/2b0f4c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f')).toBe('/api/v1/documents/2b0f4c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f');
    expect(redactUrl('/api/v1/documents?status=PAID&limit=20&cursor=ZDoxMjM')).toBe('/api/v1/documents?status=PAID&limit=20&cursor=ZDoxMjM');
    expect(redactUrl('/x?flag&y=%E0%A4%A')).toBe('/x?flag&y=%E0%A4%A');
  });
});

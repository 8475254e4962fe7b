import { displayParts, generateApiKey, hashApiKey, isWellFormedApiKey } from './api-key-format.js';

describe('API key format', () => {
  it('generates sk_tax_ followed by 43 base62 characters (256 bits)', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^sk_tax_[0-9A-Za-z]{43}$/);
    expect(isWellFormedApiKey(key)).toBe(true);
  });

  it('never repeats and uses the whole alphabet evenly enough', () => {
    const keys = Array.from({ length: 2000 }, generateApiKey);
    expect(new Set(keys).size).toBe(keys.length);
    const counts = new Map<string, number>();
    for (const key of keys) for (const c of key.slice(7)) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    const expected = (2000 * 43) / 62;
    for (const n of counts.values()) expect(Math.abs(n - expected) / expected).toBeLessThan(0.25);
  });

  it.each([
    undefined,
    123,
    '',
    'sk_tax_',
    'sk_live_' + 'a'.repeat(40),
    'sk_tax_' + 'a'.repeat(31),
    'sk_tax_' + 'a'.repeat(35) + '!',
    ' sk_tax_' + 'a'.repeat(40),
  ])('rejects the malformed %p before any lookup', (value) => {
    expect(isWellFormedApiKey(value)).toBe(false);
  });

  it('hashes with SHA-256 to 64 hex characters', () => {
    // The FIPS 180-2 test vector for "abc".
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashApiKey('sk_tax_abc')).not.toBe(hashApiKey('sk_tax_abd'));
  });

  it('shows only the first 12 and the last 4 characters', () => {
    const key = 'sk_tax_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq';
    expect(displayParts(key)).toEqual({ prefix: 'sk_tax_ABCDE', last4: 'nopq' });
  });
});

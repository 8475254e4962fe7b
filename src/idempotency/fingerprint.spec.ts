import { canonicalJson, requestFingerprint } from './fingerprint.js';

const fp = (body: unknown, method = 'POST', path = '/api/v1/documents') => requestFingerprint(method, path, body);

describe('requestFingerprint', () => {
  it('ignores key order at every depth', () => {
    expect(fp({ a: 1, b: { x: [1, { p: 1, q: 2 }], y: 'z' } })).toBe(fp({ b: { y: 'z', x: [1, { q: 2, p: 1 }] }, a: 1 }));
  });

  it('ignores whitespace, since bodies are compared after parsing', () => {
    expect(fp(JSON.parse('{"a":1,"b":[1,2]}'))).toBe(fp(JSON.parse(' {\n  "b" : [ 1 , 2 ],\t"a": 1 }\n')));
  });

  it('treats escaped and literal unicode as the same text', () => {
    expect(fp(JSON.parse('{"name":"M\\u00fcller \\ud83d\\ude00"}'))).toBe(fp(JSON.parse('{"name":"Müller 😀"}')));
  });

  it('keeps different unicode text different (no normalisation of what the client sent)', () => {
    expect(fp({ name: 'Mu\u0308ller' })).not.toBe(fp({ name: 'M\u00fcller' }));
    expect(fp({ name: 'İ' })).not.toBe(fp({ name: 'i' }));
  });

  it('tells apart values, types, array order, methods and paths', () => {
    const base = fp({ amount: '1.00', tags: ['a', 'b'] });
    expect(fp({ amount: '1.0', tags: ['a', 'b'] })).not.toBe(base);
    expect(fp({ amount: 1, tags: ['a', 'b'] })).not.toBe(base);
    expect(fp({ amount: '1.00', tags: ['b', 'a'] })).not.toBe(base);
    expect(fp({ amount: '1.00', tags: ['a', 'b'] }, 'PUT')).not.toBe(base);
    expect(fp({ amount: '1.00', tags: ['a', 'b'] }, 'POST', '/api/v1/documents/x/cancel')).not.toBe(base);
    expect(fp({ amount: '1.00', tags: ['a', 'b'], extra: null })).not.toBe(base);
  });

  it('treats a missing body as null, and is a SHA-256 hex digest', () => {
    expect(fp(undefined)).toBe(fp(null));
    expect(fp({})).toMatch(/^[0-9a-f]{64}$/);
  });

  it('cannot be confused by keys that look like JSON', () => {
    expect(canonicalJson({ 'a":1,"b': 2 })).not.toBe(canonicalJson({ a: 1, b: 2 }));
  });
});

import { bankEventTarget } from './reference-claims.js';

describe('bankEventTarget', () => {
  const claim = (id: string, established = false) => ({ id, established });

  it('sends the events to the only document, established or not; with no document, to none (unmatched)', () => {
    expect(bankEventTarget([claim('a')])).toBe('a');
    expect(bankEventTarget([claim('a', true)])).toBe('a');
    expect(bankEventTarget([])).toBeNull();
  });

  it('sends them to the established document whatever other sources claim the reference, before or after it', () => {
    expect(bankEventTarget([claim('a', true), claim('b')])).toBe('a');
    expect(bankEventTarget([claim('b'), claim('a', true), claim('c')])).toBe('a');
  });

  it('holds them (ambiguous) among several documents none of which is established, or several that are', () => {
    expect(bankEventTarget([claim('a'), claim('b')])).toBeNull();
    expect(bankEventTarget([claim('a', true), claim('b', true), claim('c')])).toBeNull();
  });
});

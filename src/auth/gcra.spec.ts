import { Gcra } from './gcra.js';

/** Counts every read and write of the limiter's state: the work of one decision. */
class CountingMap extends Map<string, number> {
  operations = 0;
  override get(key: string) {
    this.operations++;
    return super.get(key);
  }
  override set(key: string, value: number) {
    this.operations++;
    return super.set(key, value);
  }
}

describe('Gcra', () => {
  it('allows the limit at once, then refuses with the seconds until the next request fits', () => {
    const gcra = new Gcra(3);
    const now = 1_000_000;
    expect(gcra.take('k', now)).toEqual({ allowed: true, remaining: 2, resetSeconds: 20 });
    expect(gcra.take('k', now)).toEqual({ allowed: true, remaining: 1, resetSeconds: 40 });
    expect(gcra.take('k', now)).toEqual({ allowed: true, remaining: 0, resetSeconds: 60 });
    expect(gcra.take('k', now)).toEqual({ allowed: false, remaining: 0, resetSeconds: 60, retryAfterSeconds: 20 });
    expect(gcra.take('other', now)).toMatchObject({ allowed: true });
    expect(gcra.take('k', now + 19_999)).toMatchObject({ allowed: false, retryAfterSeconds: 1 });
    expect(gcra.take('k', now + 20_000)).toEqual({ allowed: true, remaining: 0, resetSeconds: 60 });
  });

  it('refused requests do not use up the budget', () => {
    const gcra = new Gcra(1);
    expect(gcra.take('k', 0).allowed).toBe(true);
    for (let i = 0; i < 100; i++) expect(gcra.take('k', 1000).allowed).toBe(false);
    expect(gcra.take('k', 60_000).allowed).toBe(true);
  });

  it('does the same work per request with 100,000 hits in the window as with 1,000', () => {
    const workAfter = (hits: number): number => {
      const arrivals = new CountingMap();
      const gcra = new Gcra(1_000_000, arrivals);
      const now = 5_000_000;
      for (let i = 0; i < hits; i++) gcra.take('busy', now + i / 1000);
      arrivals.operations = 0;
      expect(gcra.take('busy', now + hits / 1000).allowed).toBe(true);
      return arrivals.operations;
    };
    expect(workAfter(100_000)).toBe(workAfter(1_000));
    expect(workAfter(1_000)).toBeLessThanOrEqual(2);
  });

  it('forgets keys whose budget is full again', () => {
    const arrivals = new Map<string, number>();
    const gcra = new Gcra(60, arrivals);
    gcra.take('a', 0);
    gcra.take('b', 5_000);
    gcra.sweep(2_000);
    expect([...arrivals.keys()]).toEqual(['b']);
  });
});

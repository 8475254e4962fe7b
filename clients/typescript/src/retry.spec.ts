import { DEFAULT_RETRY_POLICY, parseRetryAfter, retryDelay, sleep } from './retry';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-25T10:00:00.000Z');

  it('reads delay-seconds and HTTP dates, in milliseconds from now', () => {
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Wed, 25 Nov 2026 10:00:05 GMT', now)).toBe(5000);
    // A date already past means "now", never a negative wait.
    expect(parseRetryAfter('Wed, 25 Nov 2026 09:59:00 GMT', now)).toBe(0);
  });

  it('ignores what it cannot read', () => {
    for (const value of [null, undefined, '', 'soon', '-1', '1.5']) expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});

describe('retryDelay', () => {
  const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1000 };
  const highest = () => 0.999999;

  it('draws below a ceiling that doubles with each failed attempt, up to maxDelayMs', () => {
    expect([1, 2, 3, 4, 5, 6].map((attempt) => retryDelay(attempt, policy, undefined, highest))).toEqual([99, 199, 399, 799, 999, 999]);
    expect(retryDelay(3, policy, undefined, () => 0)).toBe(0);
  });

  it('never waits less than Retry-After, even past maxDelayMs', () => {
    expect(retryDelay(1, policy, 3000, highest)).toBe(3000);
    expect(retryDelay(5, policy, 200, highest)).toBe(999);
  });
});

describe('sleep', () => {
  it("rejects with the signal's reason as soon as it aborts", async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(new Error('stop')), 20);
    await expect(sleep(10_000, controller.signal)).rejects.toThrow('stop');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('rejects at once under a signal that has already aborted', async () => {
    await expect(sleep(10_000, AbortSignal.abort(new Error('already')))).rejects.toThrow('already');
  });
});

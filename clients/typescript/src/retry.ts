/** When to try a request again, and how long to wait first. Pure functions, plus an abortable sleep. */

export interface RetryPolicy {
  /** Attempts in all, the first included; 1 turns retries off. */
  maxAttempts: number;
  /** The first backoff's ceiling; each later one doubles it. */
  baseDelayMs: number;
  /** The most any backoff waits (a longer `Retry-After` is still honoured, see `retryDelay`). */
  maxDelayMs: number;
  /**
   * The whole call, waits included, ends within this: no wait starts that would end past it, and an
   * attempt's time limit is cut to what is left.
   */
  maxElapsedMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 5,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
  maxElapsedMs: 60_000,
});

/** A `Retry-After` value (delay-seconds or an HTTP date) in milliseconds from `now`; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // Every HTTP-date form starts with the day's name; Date.parse alone would take "-1" or "1.5" for dates.
  if (!/^[A-Za-z]{3}/.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The wait before attempt `failedAttempt + 1`: capped exponential backoff with full jitter (a uniform
 * draw below the cap, so that clients that failed together do not come back together), and never less
 * than the server's `Retry-After`: asking sooner would only be refused again.
 */
export function retryDelay(failedAttempt: number, policy: RetryPolicy, retryAfterMs?: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (failedAttempt - 1));
  const backoff = Math.floor(random() * ceiling);
  return Math.max(backoff, retryAfterMs ?? 0);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts (leaving no timer or listener behind). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

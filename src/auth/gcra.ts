const WINDOW_MS = 60_000;

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * The generic cell rate algorithm: `limit` requests per minute, all of them allowed at once, then one
 * every minute/limit. Each key costs one number (its theoretical arrival time) and each decision a
 * constant amount of work, whatever the limit or the traffic.
 */
export class Gcra {
  private readonly interval: number;

  /** `arrivals` is injectable so a test can count the work per decision. */
  constructor(
    limitPerMinute: number,
    private readonly arrivals: Map<string, number> = new Map(),
  ) {
    this.interval = WINDOW_MS / limitPerMinute;
  }

  take(key: string, now = Date.now()): RateDecision {
    const next = Math.max(this.arrivals.get(key) ?? now, now) + this.interval;
    const allowedAt = next - WINDOW_MS;
    if (allowedAt > now) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((allowedAt - now) / 1000)) };
    this.arrivals.set(key, next);
    return { allowed: true };
  }

  /** Forgets keys whose budget is full again: remembering them would change nothing. */
  sweep(now = Date.now()): void {
    for (const [key, arrival] of this.arrivals) if (arrival <= now) this.arrivals.delete(key);
  }
}

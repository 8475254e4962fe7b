export const WINDOW_MS = 60_000;

/** One check against a key's budget: allowed or not, and what is left of the budget after it. */
export interface RateDecision {
  allowed: boolean;
  /** Requests the key may still make at once. */
  remaining: number;
  /** Seconds until its budget is whole again. */
  resetSeconds: number;
  /** For a refusal: seconds until the next request fits. */
  retryAfterSeconds?: number;
}

/**
 * The decision of the generic cell rate algorithm for a key whose theoretical arrival time is `tat` (ms;
 * `now` or earlier for a key with its whole budget): `limit` requests per minute, all of them allowed at
 * once, then one every minute/limit. The shared store runs the same algorithm in Redis (see
 * shared-rate-limit.ts).
 */
export function gcraDecision(tat: number, now: number, limit: number): { decision: RateDecision; tat: number } {
  const interval = WINDOW_MS / limit;
  const start = Math.max(tat, now);
  const next = start + interval;
  const allowedAt = next - WINDOW_MS;
  if (allowedAt > now) {
    return { decision: { allowed: false, ...quota(start, now, limit), retryAfterSeconds: Math.max(1, Math.ceil((allowedAt - now) / 1000)) }, tat: start };
  }
  return { decision: { allowed: true, ...quota(next, now, limit) }, tat: next };
}

/** What is left of the budget with the theoretical arrival time at `tat`. */
export function quota(tat: number, now: number, limit: number): Pick<RateDecision, 'remaining' | 'resetSeconds'> {
  const used = Math.max(0, tat - now);
  return { remaining: Math.max(0, Math.min(limit, Math.floor((WINDOW_MS - used) / (WINDOW_MS / limit)))), resetSeconds: Math.ceil(used / 1000) };
}

/**
 * GCRA in this process: each key costs one number (its theoretical arrival time) and each decision a
 * constant amount of work, whatever the limit or the traffic.
 */
export class Gcra {
  /** `arrivals` is injectable so a test can count the work per decision. */
  constructor(
    private readonly limitPerMinute: number,
    private readonly arrivals: Map<string, number> = new Map(),
  ) {}

  take(key: string, now = Date.now()): RateDecision {
    const { decision, tat } = gcraDecision(this.arrivals.get(key) ?? now, now, this.limitPerMinute);
    if (decision.allowed) this.arrivals.set(key, tat);
    return decision;
  }

  /** Forgets keys whose budget is full again: remembering them would change nothing. */
  sweep(now = Date.now()): void {
    for (const [key, arrival] of this.arrivals) if (arrival <= now) this.arrivals.delete(key);
  }
}

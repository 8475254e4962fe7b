import type { Client } from 'openapi-fetch';
import { GatewayError, GatewayNetworkError, GatewayProblemError, GatewayTimeoutError } from './errors';
import type { paths } from './generated/openapi';
import { parseRetryAfter, retryDelay, RetryPolicy, sleep } from './retry';

/** What every call of the client takes besides its own arguments. */
export interface CallOptions {
  /** Aborts the call: the attempt in flight and any wait between attempts. The call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Time limit of each attempt, answer body included (the client's `timeoutMs` by default). */
  timeoutMs?: number;
  /** Overrides the client's retry policy for this call. */
  retry?: Partial<RetryPolicy>;
}

/** Told before each wait for another attempt, e.g. to log it. */
export interface RetryEvent {
  method: string;
  path: string;
  /** The attempt that failed (1 for the first). */
  attempt: number;
  delayMs: number;
  error: GatewayError;
}

export interface TransportSettings {
  timeoutMs: number;
  retry: RetryPolicy;
  onRetry?: (event: RetryEvent) => void;
}

/** One attempt through openapi-fetch: its `{ data, error, response }`. */
export type Attempt<T> = (signal: AbortSignal) => Promise<{ data?: T; error?: unknown; response: Response }>;

export interface Answered<T> {
  data: T;
  response: Response;
}

/** The generated openapi-fetch client and the settings every call of the hand-written layer runs under. */
export class Transport {
  constructor(
    readonly api: Client<paths>,
    private readonly settings: TransportSettings,
  ) {}

  send<T>(route: { method: string; path: string }, attempt: Attempt<T>, options?: CallOptions): Promise<Answered<T>> {
    return sendWithRetries(route, attempt, this.settings, options);
  }
}

/**
 * Runs `attempt` until it gets a 2xx, retrying what `GatewayError.retryable` allows within the
 * policy. The caller makes `attempt` send the same request every time, the same idempotency key
 * included: that is what makes retrying a POST safe.
 */
export async function sendWithRetries<T>(
  route: { method: string; path: string },
  attempt: Attempt<T>,
  settings: TransportSettings,
  options: CallOptions = {},
): Promise<Answered<T>> {
  const policy = { ...settings.retry, ...options.retry };
  const timeoutMs = options.timeoutMs ?? settings.timeoutMs;
  const { signal } = options;
  const started = Date.now();
  for (let attempts = 1; ; attempts += 1) {
    signal?.throwIfAborted();
    const left = policy.maxElapsedMs - (Date.now() - started);
    const outcome = await attemptOnce(attempt, Math.max(1, Math.min(timeoutMs, left)), attempts, signal);
    if (!(outcome instanceof GatewayError) && outcome.response.ok) return { data: outcome.data as T, response: outcome.response };
    const error = outcome instanceof GatewayError ? outcome : problemOf(outcome, attempts);
    if (!error.retryable || attempts >= policy.maxAttempts) throw error;
    const delayMs = retryDelay(attempts, policy, error instanceof GatewayProblemError ? error.retryAfterMs : undefined);
    if (Date.now() - started + delayMs >= policy.maxElapsedMs) throw error;
    settings.onRetry?.({ ...route, attempt: attempts, delayMs, error });
    await sleep(delayMs, signal);
  }
}

/**
 * One attempt under its own time limit, as an answer or a network/timeout error. The caller's abort
 * is rethrown as its reason. The signals are linked by hand rather than with `AbortSignal.any`: on
 * Node 20 every signal made that way stays referenced by a long-lived source signal (nodejs/node#55351),
 * and `events.follow()` makes one request after another under one signal for as long as it runs.
 */
async function attemptOnce<T>(attempt: Attempt<T>, timeoutMs: number, attempts: number, signal?: AbortSignal) {
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal!.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new GatewayTimeoutError(timeoutMs, attempts));
  }, timeoutMs);
  try {
    return await attempt(controller.signal);
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (timedOut) return new GatewayTimeoutError(timeoutMs, attempts);
    if (isFetchFailure(error)) return new GatewayNetworkError(error, attempts);
    throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

function problemOf(answer: { error?: unknown; response: Response }, attempts: number): GatewayProblemError {
  const { response } = answer;
  return new GatewayProblemError(response.status, answer.error, response.headers, parseRetryAfter(response.headers.get('retry-after')), attempts);
}

/**
 * Node's fetch reports every failure to get an answer (refused, reset, closed mid-body) as a TypeError
 * whose `cause` says what happened; a TypeError without one is a bug, not the network, and is not
 * retried. Checked by name, not `instanceof`: the error comes from fetch's realm, which need not be the
 * caller's (a Jest or vm context).
 */
function isFetchFailure(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as Error).name === 'TypeError' && (error as Error).cause !== undefined;
}

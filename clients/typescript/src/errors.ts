import type { ErrorCode, FieldError, Problem } from './types';

/**
 * What a call of this client throws, apart from the reason of an `AbortSignal` the caller aborted
 * (thrown as it is, as `fetch` does). `retryable` says whether the client would try again; when one of
 * these reaches the caller, the retries it was allowed are spent (`attempts` were made).
 */
export abstract class GatewayError extends Error {
  abstract readonly retryable: boolean;

  constructor(
    message: string,
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The gateway answered with an error status; its problem+json body (RFC 9457), typed. */
export class GatewayProblemError extends GatewayError {
  /** `undefined` only when the answer was not the gateway's problem+json (a proxy's error page, say). */
  readonly code: ErrorCode | undefined;
  readonly detail: string | undefined;
  /** Validation failures: every bad field, by JSON path (`taxpayer.country`). Empty otherwise. */
  readonly errors: FieldError[];
  /** The gateway's id of the request, for its logs: the body's `requestId`, else the `X-Request-Id` header. */
  readonly requestId: string | undefined;
  /** How long the gateway asked to wait (`Retry-After`), when it did. */
  readonly retryAfterMs: number | undefined;
  /** The body as parsed: the problem object, or the text of an answer that was not JSON. */
  readonly body: unknown;

  constructor(
    readonly status: number,
    body: unknown,
    headers: Headers,
    retryAfterMs: number | undefined,
    attempts: number,
  ) {
    const problem = isProblem(body) ? body : undefined;
    super(describe(status, problem, body), attempts);
    this.body = body;
    this.code = problem?.code;
    this.detail = problem?.detail;
    this.errors = problem?.errors ?? [];
    this.requestId = problem?.requestId ?? headers.get('x-request-id') ?? undefined;
    this.retryAfterMs = retryAfterMs;
  }

  /** The problem+json body, when the answer was one. */
  get problem(): Problem | undefined {
    return isProblem(this.body) ? this.body : undefined;
  }

  /**
   * Worth another attempt with the same idempotency key: the key was busy, the key's rate was
   * exceeded, or the gateway (or a proxy before it) could not serve the request. Any other 4xx says the
   * request itself must change, and a 500 is a bug a retry would meet again.
   */
  get retryable(): boolean {
    if (this.status === 409) return this.code === 'IDEMPOTENCY_KEY_IN_USE';
    return RETRYABLE_STATUSES.has(this.status);
  }
}

const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

/** No answer: the connection was refused, reset or closed before the answer was complete. */
export class GatewayNetworkError extends GatewayError {
  readonly retryable = true;

  constructor(cause: unknown, attempts: number) {
    super(`the request failed before an answer arrived: ${describeCause(cause)}`, attempts, { cause });
  }
}

/** No complete answer within the attempt's time limit (`timeoutMs`, or what was left of `maxElapsedMs`). */
export class GatewayTimeoutError extends GatewayError {
  readonly retryable = true;

  constructor(
    readonly timeoutMs: number,
    attempts: number,
  ) {
    super(`no answer within ${timeoutMs} ms`, attempts);
  }
}

/** A push notification whose signature, headers or timestamp did not verify: do not trust its body. */
export class GatewayWebhookVerificationError extends GatewayError {
  readonly retryable = false;

  constructor(message: string, cause?: unknown) {
    super(message, 0, { cause });
  }
}

function isProblem(body: unknown): body is Problem {
  return typeof body === 'object' && body !== null && typeof (body as Problem).code === 'string' && typeof (body as Problem).status === 'number';
}

/**
 * The status, the code and the detail, then each field error on a line of its own: the detail alone
 * ("The request is not valid") leaves out what the server said was wrong.
 */
function describe(status: number, problem: Problem | undefined, body: unknown): string {
  if (!problem) return `${status} HTTP error: ${String(body).slice(0, 200)}`;
  const fields = (problem.errors ?? []).map((error) => `\n  ${error.field}: ${error.message}`);
  return `${status} ${problem.code}: ${problem.detail}${fields.join('')}`;
}

/** undici reports "fetch failed" and puts what happened (ECONNREFUSED, "other side closed") in the cause. */
function describeCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  const own = error instanceof Error ? error.message : String(error);
  return cause?.code ?? cause?.message ?? own;
}

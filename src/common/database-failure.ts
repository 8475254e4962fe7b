/**
 * Why the database could not serve a request, for the 503 answer and its log line. Each cause has
 * its own wording: "unreachable" while PostgreSQL is up but the pool is exhausted sends an operator
 * looking in the wrong place.
 */
export type DatabaseFailure = 'unreachable' | 'saturated' | 'session_ended' | 'no_answer' | 'statement_timeout' | 'lock_timeout' | 'read_only';

/**
 * What the gateway knows of a request's changes when the database failed it: `nothing_saved` only where
 * PostgreSQL itself cancelled the work; `unknown` where statements, COMMIT among them, may have reached it
 * and no answer came back (PostgreSQL frozen, the connection lost): it may have committed them since.
 */
type Outcome = 'not_said' | 'nothing_saved' | 'unknown';

export const DATABASE_FAILURES: Record<DatabaseFailure, { cause: string; outcome: Outcome; retryAfterSeconds: number }> = {
  unreachable: { cause: 'The database is unreachable', outcome: 'not_said', retryAfterSeconds: 5 },
  saturated: { cause: 'The gateway is saturated: no database connection became free in time', outcome: 'not_said', retryAfterSeconds: 1 },
  session_ended: { cause: 'The database ended the session during the request', outcome: 'unknown', retryAfterSeconds: 1 },
  no_answer: { cause: 'The database did not answer in time', outcome: 'unknown', retryAfterSeconds: 5 },
  statement_timeout: { cause: 'The database stopped a statement that ran past its time limit', outcome: 'nothing_saved', retryAfterSeconds: 5 },
  lock_timeout: { cause: 'Another transaction holds data this request needs', outcome: 'nothing_saved', retryAfterSeconds: 1 },
  // A standby, or a former primary during a failover: it refused the write, and the transaction it was in
  // rolled back with it.
  read_only: { cause: 'The database accepts no changes: it is a standby, or a failover is under way', outcome: 'nothing_saved', retryAfterSeconds: 1 },
};

/** What kind of request failed: what a retry of it does depends on it. */
export type RequestKind = 'read' | 'api_write' | 'bank_webhook' | 'unkeyed_write';

export function requestKindOf(method: string, path: string): RequestKind {
  if (method === 'GET' || method === 'HEAD') return 'read';
  if (path.startsWith('/api/webhooks/')) return 'bank_webhook'; // the bank's callbacks (BANK_WEBHOOK_PATH)
  // Only the API's POSTs carry an idempotency key to retry with; any other change is looked at first.
  if (path.startsWith('/api/') && method === 'POST') return 'api_write';
  return 'unkeyed_write';
}

/** After an unknown outcome: whether trying again is safe, by kind of request. */
const UNKNOWN_OUTCOME: Record<RequestKind, string> = {
  read: 'try again shortly',
  api_write: 'it may have been saved; retrying with the same X-Idempotency-Key is safe',
  bank_webhook: 'it may have been saved; sending the event again with the same eventId is safe',
  unkeyed_write: 'the change may have been made; look before trying again',
};

/** The 503's detail: the cause, then no more than the gateway knows of what was saved. */
export function databaseFailureDetail(failure: DatabaseFailure, kind: RequestKind): string {
  const { cause, outcome } = DATABASE_FAILURES[failure];
  if (outcome === 'unknown') return `${cause}; ${UNKNOWN_OUTCOME[kind]}`;
  return outcome === 'nothing_saved' ? `${cause}; nothing was saved, try again shortly` : `${cause}; try again shortly`;
}

/** Socket errors of a connection that cannot be made or was lost. */
const UNREACHABLE_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);

/**
 * SQLSTATEs by cause: 08 connection exceptions, 57P0x the server ending sessions, 57014 and 55P03 the
 * timeouts, 25006 a write sent to a server that is not (or no longer) the primary.
 */
function bySqlState(code: string): DatabaseFailure | null {
  if (code === '25006') return 'read_only';
  if (code.startsWith('08') || code === '57P03') return 'unreachable';
  if (code === '57P01' || code === '57P02' || code === '57P05' || code === '25P03') return 'session_ended';
  if (code === '57014') return 'statement_timeout';
  if (code === '55P03') return 'lock_timeout';
  return null;
}

/**
 * Messages of pg and pg-pool, which carry no code; and TypeORM's for a transaction whose connection was
 * lost mid-request (its QueryRunner gives a failed connection back at once, and refuses what comes after).
 */
const BY_MESSAGE: [RegExp, DatabaseFailure][] = [
  [/timeout exceeded when trying to connect/i, 'saturated'],
  [/Connection terminated due to connection timeout/i, 'unreachable'],
  // pg's own bound on opening a connection (connectionTimeoutMillis), as the readiness probe meets it.
  [/^timeout expired$/i, 'unreachable'],
  [/Query read timeout/i, 'no_answer'],
  [/Connection terminated|Client has encountered a connection error|not queryable|Query runner already released/i, 'session_ended'],
];

/**
 * The database could not serve the request: what the data layer (and the readiness probe) throw instead of
 * a driver error that means so. Only this answers 503: a socket error of the client's own connection (a
 * client that went away mid-request) carries the same codes, and is no database failure.
 */
export class DatabaseUnavailable extends Error {
  constructor(
    readonly failure: DatabaseFailure,
    cause: unknown,
  ) {
    super(DATABASE_FAILURES[failure].cause, { cause });
    this.name = 'DatabaseUnavailable';
  }

  /** The driver error's code (SQLSTATE or errno), for the log line. */
  get code(): string | undefined {
    const code = (this.cause as { code?: unknown } | null)?.code;
    return typeof code === 'string' ? code : undefined;
  }
}

/** `error` as a DatabaseUnavailable when it means the database could not serve the request; otherwise as it is. */
export function asDatabaseUnavailable(error: unknown): unknown {
  if (error instanceof DatabaseUnavailable) return error;
  const failure = databaseFailureOf(error);
  return failure ? new DatabaseUnavailable(failure, error) : error;
}

/** The cause when `error` means the database could not serve the request (as opposed to a query that is wrong). */
export function databaseFailureOf(error: unknown): DatabaseFailure | null {
  if (error instanceof DatabaseUnavailable) return error.failure;
  // Duck-typed: driver errors may come from another realm (worker, VM), where instanceof fails.
  if (typeof error !== 'object' || error === null) return null;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (UNREACHABLE_ERRNOS.has(code)) return 'unreachable';
    const cause = bySqlState(code);
    if (cause) return cause;
  }
  if (typeof message !== 'string') return null;
  return BY_MESSAGE.find(([pattern]) => pattern.test(message))?.[1] ?? null;
}

export function isDatabaseUnavailable(error: unknown): boolean {
  return databaseFailureOf(error) !== null;
}

/**
 * What a log line says of a failure: its cause (a DatabaseFailure, or the error's SQLSTATE or name) and
 * PostgreSQL's own message, never the SQL or the values it was sent with.
 */
export function describeFailure(error: unknown): { cause: string; code?: string; message?: string } {
  const { code, name, message } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; name?: unknown; message?: unknown };
  const failure = databaseFailureOf(error);
  // A bare Error's name says nothing: then its message is what failed (ioredis's "Connection is closed.").
  const named = typeof name === 'string' && name !== 'Error' ? name : typeof message === 'string' && message ? message.slice(0, 80) : 'unknown';
  return {
    cause: failure ?? (typeof code === 'string' ? code : named),
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof message === 'string' ? { message: message.slice(0, 200) } : { message: String(error).slice(0, 200) }),
  };
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set when the request was answered 503 because of the database: why (for the metrics). */
    databaseFailure?: DatabaseFailure;
  }
}

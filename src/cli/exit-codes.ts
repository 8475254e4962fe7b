import { AppError } from '../common/app-error.js';
import { databaseFailureDetail, databaseFailureOf } from '../common/database-failure.js';
import { ERROR_STATUS, ErrorCode, FieldError } from '../common/error-codes.js';
import { problemTitle } from '../common/problem.js';
import { ConfigValidationError } from '../config/app-config.js';
import { EmbeddedPostgresError } from '../database/embedded-postgres-layout.js';

/** The CLI's exit codes: what a script branches on (README, docs/cli.md and `tdg --help` list them). */
export const EXIT = {
  OK: 0,
  /** Anything unexpected, and a configuration the gateway would refuse too. */
  FAILED: 1,
  /** A bad command line, or arguments the REST API would answer with 422. */
  USAGE: 2,
  /** No such key, administrator, token, endpoint, delivery or cluster (404). */
  NOT_FOUND: 3,
  /** The state does not allow it, or a duplicate (409). */
  CONFLICT: 4,
  /** The database cannot be used: unreachable, no embedded cluster in DATA_DIR, or its schema behind (503). */
  DATABASE: 5,
  /** `archive verify` found the archive, the feed or a document altered: each finding is printed. */
  FINDINGS: 6,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Every error code of the README has its exit code: the compiler refuses a new code that is not mapped here. */
const EXIT_BY_CODE: Record<ErrorCode, ExitCode> = {
  VALIDATION_ERROR: EXIT.USAGE,
  IDEMPOTENCY_KEY_REUSED: EXIT.USAGE,
  NOT_FOUND: EXIT.NOT_FOUND,
  DUPLICATE_ADMIN: EXIT.CONFLICT,
  DUPLICATE_DOCUMENT: EXIT.CONFLICT,
  INVALID_STATE_TRANSITION: EXIT.CONFLICT,
  IDEMPOTENCY_KEY_IN_USE: EXIT.CONFLICT,
  SERVICE_UNAVAILABLE: EXIT.DATABASE,
  // The CLI acts with the role `admin` and without HTTP: none of these is expected from its services.
  UNAUTHORIZED: EXIT.FAILED,
  BAD_REQUEST: EXIT.FAILED,
  FORBIDDEN: EXIT.FAILED,
  WEBHOOK_SIGNATURE_INVALID: EXIT.FAILED,
  METHOD_NOT_ALLOWED: EXIT.FAILED,
  PAYLOAD_TOO_LARGE: EXIT.FAILED,
  UNSUPPORTED_MEDIA_TYPE: EXIT.FAILED,
  RATE_LIMITED: EXIT.FAILED,
  MALFORMED_REQUEST: EXIT.FAILED,
  REQUEST_TIMEOUT: EXIT.FAILED,
  HEADERS_TOO_LARGE: EXIT.FAILED,
  INTERNAL_ERROR: EXIT.FAILED,
};

/**
 * A mistake in the command line, found by the parser or by the REST API's validation. `errors` name
 * flags; `help` is shown to a person after the error (the usage, or where to find it).
 */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly errors: FieldError[] = [],
    readonly help?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The database is there but may not be used as it is (its schema is behind and MIGRATIONS_RUN=false). */
export class OperatorError extends Error {}

/** What went wrong, in the README's terms: a code, a detail for people, and the bad flags. */
export interface CliFailure {
  code: ErrorCode;
  detail: string;
  errors?: FieldError[];
}

/** The problem+json object (README, "Errors") without `instance` and `requestId`, which name an HTTP request. */
export interface CliProblem extends CliFailure {
  type: 'about:blank';
  title: string;
  status: number;
}

/** `expiresAt` → `--expires-at`: the DTOs name fields, the operator typed flags. */
export const flagOf = (field: string) => `--${field.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}`;

function databaseDetail(error: unknown): string | null {
  const failure = databaseFailureOf(error);
  if (!failure) return null;
  // The CLI's commands change things: after a lost answer, the operator looks before running one again.
  if (failure !== 'unreachable') return databaseFailureDetail(failure, 'unkeyed_write');
  // Never the URL: it may carry the password.
  const code = (error as { code?: unknown }).code;
  return `The database could not be reached${typeof code === 'string' ? ` (${code})` : ''}; check DATABASE_URL, the PG* variables or DATA_DIR`;
}

/** Any thrown value as a failure in the README's terms; never a stack trace or the SQL of a statement. */
export function classify(error: unknown): CliFailure {
  if (error instanceof UsageError) return { code: 'VALIDATION_ERROR', detail: error.message, ...(error.errors.length ? { errors: error.errors } : {}) };
  if (error instanceof AppError) {
    const errors = error.errors?.map((e) => ({ field: flagOf(e.field), message: e.message }));
    return { code: error.code, detail: error.detail, ...(errors?.length ? { errors } : {}) };
  }
  const database = databaseDetail(error);
  if (database) return { code: 'SERVICE_UNAVAILABLE', detail: database };
  if (error instanceof OperatorError || error instanceof EmbeddedPostgresError) return { code: 'SERVICE_UNAVAILABLE', detail: error.message };
  if (error instanceof ConfigValidationError) return { code: 'INTERNAL_ERROR', detail: `Invalid configuration: ${error.problems.join('; ')}` };
  return { code: 'INTERNAL_ERROR', detail: `Unexpected failure: ${error instanceof Error ? error.message : String(error)}` };
}

export function exitCodeOf(failure: CliFailure): ExitCode {
  return EXIT_BY_CODE[failure.code];
}

export function problemOf(failure: CliFailure): CliProblem {
  const status = ERROR_STATUS[failure.code];
  return { type: 'about:blank', title: problemTitle(status), status, ...failure };
}

/** For a person: one line, naming every bad flag. */
export function messageOf(failure: CliFailure): string {
  const detail = failure.errors?.length ? failure.errors.map((e) => `${e.field} ${e.message}`).join('; ') : failure.detail;
  return `error: ${detail.replace(/\s*\n\s*/g, ' ')}`;
}

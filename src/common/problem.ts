import { HttpException } from '@nestjs/common';
import { STATUS_CODES } from 'node:http';
import { AppError } from './app-error.js';
import { DATABASE_FAILURES, databaseFailureDetail, DatabaseUnavailable, RequestKind } from './database-failure.js';
import { ERROR_STATUS, ErrorCode, FieldError } from './error-codes.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
export const RETRY_AFTER_DATABASE_SECONDS = '5';

export interface ProblemBody {
  type: 'about:blank';
  title: string;
  status: number;
  code: ErrorCode;
  detail: string;
  instance: string;
  requestId: string;
  errors?: FieldError[];
}

export interface Problem {
  body: ProblemBody;
  headers: Record<string, string>;
  /** Unexpected failures are logged with their stack; expected ones are not. */
  unexpected: boolean;
}

/** RFC 9110 names where Node's table still has the older ones. */
const TITLES: Record<number, string> = { 413: 'Content Too Large', 422: 'Unprocessable Content' };

/** The `title` of every problem with this status; the OpenAPI examples use it too. */
export function problemTitle(status: number): string {
  return TITLES[status] ?? STATUS_CODES[status] ?? 'Error';
}

/** At most this many field errors are listed: enough to fix a request, never a multi-megabyte answer. */
export const MAX_FIELD_ERRORS = 50;

const FASTIFY_CODES: Record<string, { code: ErrorCode; detail: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', detail: 'The request body is larger than the limit' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', detail: 'The request body must be application/json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'VALIDATION_ERROR', detail: 'Content-Length does not match the body' },
};

/**
 * The code of an HttpException (Nest's, or a library's) by its status, which it keeps. Any other status below
 * 500 is a refusal nobody named, so BAD_REQUEST, the generic one: never VALIDATION_ERROR, which means that a
 * validation failed and that a corrected retry may pass.
 */
const HTTP_STATUS_CODES: Partial<Record<number, ErrorCode>> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'VALIDATION_ERROR',
  429: 'RATE_LIMITED',
  503: 'SERVICE_UNAVAILABLE',
};

function classify(error: unknown, kind: RequestKind): { code: ErrorCode; detail: string; errors?: FieldError[]; headers?: Record<string, string> } {
  if (error instanceof AppError) return error;
  const fastifyCode = (error as { code?: unknown } | null)?.code;
  if (typeof fastifyCode === 'string' && fastifyCode in FASTIFY_CODES) return FASTIFY_CODES[fastifyCode];
  if (error instanceof DatabaseUnavailable) {
    const detail = databaseFailureDetail(error.failure, kind);
    return { code: 'SERVICE_UNAVAILABLE', detail, headers: { 'Retry-After': String(DATABASE_FAILURES[error.failure].retryAfterSeconds) } };
  }
  if (error instanceof HttpException) {
    const status = error.getStatus();
    const code = HTTP_STATUS_CODES[status] ?? (status < 500 ? 'BAD_REQUEST' : 'INTERNAL_ERROR');
    if (code === 'NOT_FOUND') return { code, detail: 'No such route or resource' };
    if (code === 'SERVICE_UNAVAILABLE') return { code, detail: 'The service is not ready; try again shortly' };
    if (code === 'INTERNAL_ERROR') return { code, detail: 'An unexpected error occurred' };
    return { code, detail: error.message };
  }
  return { code: 'INTERNAL_ERROR', detail: 'An unexpected error occurred' };
}

/**
 * Turns any thrown value into the one error shape (README, "Errors"), without internals. `kind` words a
 * database failure's outcome; without it, the answer assumes a change may have been made.
 */
export function toProblem(error: unknown, instance: string, requestId: string, kind: RequestKind = 'unkeyed_write'): Problem {
  const { code, detail, errors, headers = {} } = classify(error, kind);
  const status = ERROR_STATUS[code];
  const extraHeaders = { ...headers };
  if (code === 'SERVICE_UNAVAILABLE' && !extraHeaders['Retry-After']) extraHeaders['Retry-After'] = RETRY_AFTER_DATABASE_SECONDS;
  const body: ProblemBody = {
    type: 'about:blank',
    title: problemTitle(status),
    status,
    code,
    detail,
    instance,
    requestId,
    ...(errors ? { errors: errors.slice(0, MAX_FIELD_ERRORS) } : {}),
  };
  return { body, headers: extraHeaders, unexpected: code === 'INTERNAL_ERROR' };
}

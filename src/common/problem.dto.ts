import { applyDecorators } from '@nestjs/common';
import { ApiExtraModels, ApiProperty, ApiPropertyOptional, ApiResponse, getSchemaPath } from '@nestjs/swagger';
import type { ExampleObject, HeaderObject, ResponseObject } from '@nestjs/swagger';
import { ERROR_STATUS, ErrorCode, FieldError } from './error-codes.js';
import { DATABASE_FAILURES } from './database-failure.js';
import { PROBLEM_CONTENT_TYPE, problemTitle } from './problem.js';

export class FieldErrorDto {
  @ApiProperty({ example: 'taxpayer.country', description: 'A body field by its JSON path, a header, or a query or path parameter' })
  field: string;
  @ApiProperty({ example: 'must be an ISO 3166-1 alpha-2 country code in upper case' }) message: string;
}

export class ProblemDto {
  @ApiProperty({ enum: ['about:blank'], example: 'about:blank' }) type: string;
  @ApiProperty({ example: 'Unprocessable Content', description: 'The RFC 9110 name of the status' }) title: string;
  @ApiProperty({ type: 'integer', example: 422 }) status: number;
  @ApiProperty({ enum: Object.keys(ERROR_STATUS), example: 'VALIDATION_ERROR', description: 'What went wrong, for programs' }) code: string;
  @ApiProperty({ example: 'The request is not valid', description: 'What went wrong, for people' }) detail: string;
  @ApiProperty({ example: '/api/v1/documents', description: 'The request path' }) instance: string;
  @ApiProperty({ example: '3f0c8a52-0b4e-4a53-9d7e-2f1c9b7f0e11', description: 'Also in the X-Request-Id header and every log line of the request' })
  requestId: string;
  @ApiPropertyOptional({ type: [FieldErrorDto], description: 'Validation failures only: every bad field' })
  errors?: FieldError[];
}

/** Where in the API a problem happened; some details are worded per area, as the server words them. */
export interface ProblemContext {
  path: string;
  /** The first input the validation checks, for the VALIDATION_ERROR example. */
  validated: 'idempotency-key' | 'body' | 'webhook-body' | 'path' | 'query';
}

const ADMIN = /^\/admin\//;
const EXAMPLE_ID = '0b1e3f6a-5c2d-4e7f-9a8b-1c2d3e4f5a6b';

const VALIDATION_EXAMPLES: Record<ProblemContext['validated'], { detail: string; errors: FieldError[] }> = {
  'idempotency-key': { detail: 'X-Idempotency-Key header is required', errors: [{ field: 'X-Idempotency-Key', message: 'is required' }] },
  body: { detail: 'The request body is not valid JSON', errors: [{ field: 'body', message: 'is not valid JSON' }] },
  'webhook-body': {
    detail: 'The webhook body is malformed',
    errors: [{ field: 'providerReference', message: 'must be a non-empty string of at most 255 characters' }],
  },
  path: { detail: 'The request is not valid', errors: [{ field: 'id', message: 'must not contain NUL characters' }] },
  query: { detail: 'The request is not valid', errors: [{ field: 'sort', message: 'is not an allowed field' }] },
};

/** The detail (and field errors) the server sends for each code, as a reader of the document sees it. */
function exampleOf(code: ErrorCode, context: ProblemContext): { detail: string; errors?: FieldError[] } {
  const admin = ADMIN.test(context.path);
  switch (code) {
    case 'BAD_REQUEST':
      return { detail: 'Validation failed (numeric string is expected)' };
    case 'UNAUTHORIZED':
      return {
        detail: admin
          ? 'A valid admin credential is required: Authorization: Bearer <token> (a personal adm_tax_… token or ADMIN_TOKEN), or a console session'
          : 'A valid API key is required in the X-API-Key header',
      };
    case 'WEBHOOK_SIGNATURE_INVALID':
      return { detail: 'The webhook signature could not be verified' };
    case 'NOT_FOUND':
      return { detail: admin ? 'No such API key' : 'No such document' };
    case 'FORBIDDEN':
      return { detail: 'This needs the admin role; yours is viewer' };
    case 'DUPLICATE_ADMIN':
      return { detail: 'An administrator with this email exists' };
    case 'METHOD_NOT_ALLOWED':
      return { detail: 'PUT is not allowed here; the Allow header lists the methods that are' };
    case 'IDEMPOTENCY_KEY_IN_USE':
      return { detail: 'A request with this idempotency key is still being processed; retry shortly' };
    case 'DUPLICATE_DOCUMENT':
      return { detail: 'A document with externalId "INV-2026-0001" already exists for this source' };
    case 'INVALID_STATE_TRANSITION':
      return { detail: admin ? 'This key was already rotated; rotate its successor instead' : 'A document in status PAID cannot be cancelled' };
    case 'PAYLOAD_TOO_LARGE':
      return { detail: 'The request body is larger than the limit' };
    case 'UNSUPPORTED_MEDIA_TYPE':
      return { detail: 'A request body must be sent as application/json' };
    case 'VALIDATION_ERROR':
      return VALIDATION_EXAMPLES[context.validated];
    case 'IDEMPOTENCY_KEY_REUSED':
      return { detail: 'This idempotency key was already used for a different request' };
    case 'RATE_LIMITED':
      return { detail: admin ? 'Too many failed attempts from this address; try again later' : 'More than 600 requests per minute with this API key' };
    case 'INTERNAL_ERROR':
      return { detail: 'An unexpected error occurred' };
    case 'SERVICE_UNAVAILABLE':
      return { detail: context.path === '/health/ready' ? 'The service is not ready; try again shortly' : 'The database is unreachable; try again shortly' };
    case 'MALFORMED_REQUEST':
      return { detail: 'The request is not valid HTTP' };
    case 'REQUEST_TIMEOUT':
      return { detail: 'The request was not received in time' };
    case 'HEADERS_TOO_LARGE':
      return { detail: 'The request headers are too large' };
  }
}

const DATABASE_WAITS = Object.values(DATABASE_FAILURES).map((failure) => failure.retryAfterSeconds);

/** Codes whose answer tells the client when to try again. */
const RETRY_AFTER: Partial<Record<ErrorCode, string>> = {
  IDEMPOTENCY_KEY_IN_USE: 'retry after 1 second',
  RATE_LIMITED: 'seconds until the limit resets',
  SERVICE_UNAVAILABLE: `retry after ${Math.min(...DATABASE_WAITS)} to ${Math.max(...DATABASE_WAITS)} seconds, by cause`,
};

export function byStatus(codes: Iterable<ErrorCode>): Map<number, ErrorCode[]> {
  const groups = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) groups.set(ERROR_STATUS[code], [...(groups.get(ERROR_STATUS[code]) ?? []), code]);
  return groups;
}

/** One status's problem response: the problem+json schema and, per code, an example as the server sends it. */
export function problemResponse(codes: ErrorCode[], context: ProblemContext): ResponseObject {
  const status = ERROR_STATUS[codes[0]];
  const instance = context.path.replace(/\{[^}]+\}/g, EXAMPLE_ID);
  const examples: Record<string, ExampleObject> = Object.fromEntries(
    codes.map((code) => [
      code,
      {
        summary: code,
        value: {
          type: 'about:blank',
          title: problemTitle(status),
          status,
          code,
          ...exampleOf(code, context),
          instance,
          requestId: '3f0c8a52-0b4e-4a53-9d7e-2f1c9b7f0e11',
        },
      },
    ]),
  );
  const retrying = codes.filter((code) => RETRY_AFTER[code]);
  const headers: Record<string, HeaderObject> = {};
  if (retrying.length) {
    headers['Retry-After'] = {
      description: retrying.map((code) => `${code}: ${RETRY_AFTER[code]}`).join('; '),
      required: retrying.length === codes.length,
      schema: { type: 'integer', minimum: 1 },
    };
  }
  return {
    description: codes.join(' | '),
    headers,
    content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: getSchemaPath(ProblemDto) }, examples } },
  };
}

/** The codes an already documented problem response stands for (its examples are keyed by code). */
export function problemCodesOf(response: ResponseObject | undefined): ErrorCode[] {
  const examples = response?.content?.[PROBLEM_CONTENT_TYPE]?.examples ?? {};
  return Object.keys(examples).filter((code): code is ErrorCode => code in ERROR_STATUS);
}

/**
 * The error answers an operation gives beyond those every route of its kind gives (see setupOpenApi),
 * each an application/problem+json body. The examples are completed with the real path when the
 * document is built.
 */
export function ApiProblems(...codes: ErrorCode[]) {
  return applyDecorators(
    ApiExtraModels(ProblemDto),
    ...[...byStatus(codes)].map(([status, group]) => ApiResponse({ status, ...problemResponse(group, { path: '', validated: 'body' }) })),
  );
}

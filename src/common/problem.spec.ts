import {
  BadRequestException,
  ForbiddenException,
  ImATeapotException,
  NotFoundException,
  NotImplementedException,
  ServiceUnavailableException,
  UnprocessableEntityException,
} from '@nestjs/common';
import { Client } from 'pg';
import { AppError } from './app-error.js';
import { asDatabaseUnavailable, databaseFailureOf, describeFailure, isDatabaseUnavailable, requestKindOf } from './database-failure.js';
import { toProblem } from './problem.js';
import { QueryRunnerAlreadyReleasedError } from 'typeorm';

describe('toProblem', () => {
  it('renders an AppError with its code, status, field errors and headers', () => {
    const error = new AppError('IDEMPOTENCY_KEY_IN_USE', 'still running', undefined, { 'Retry-After': '1' });
    expect(toProblem(error, '/api/v1/documents', 'r1')).toEqual({
      body: {
        type: 'about:blank',
        title: 'Conflict',
        status: 409,
        code: 'IDEMPOTENCY_KEY_IN_USE',
        detail: 'still running',
        instance: '/api/v1/documents',
        requestId: 'r1',
      },
      headers: { 'Retry-After': '1' },
      unexpected: false,
    });
    const validation = toProblem(AppError.validation([{ field: 'taxpayer.country', message: 'is invalid' }]), '/x', 'r2');
    expect(validation.body).toMatchObject({ status: 422, title: 'Unprocessable Content', errors: [{ field: 'taxpayer.country', message: 'is invalid' }] });
  });

  it('maps Nest HTTP exceptions onto the README’s error codes', () => {
    expect(toProblem(new NotFoundException('Cannot GET /x'), '/x', 'r').body).toMatchObject({
      status: 404,
      code: 'NOT_FOUND',
      detail: 'No such route or resource',
    });
    const unavailable = toProblem(new ServiceUnavailableException({ database: 'down' }), '/health/ready', 'r');
    expect(unavailable.body).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect(unavailable.headers['Retry-After']).toBe('5');
  });

  it('keeps the status of an HTTP exception without a code of the README, and never calls it a validation failure', () => {
    expect(toProblem(new BadRequestException('Validation failed (numeric string is expected)'), '/x', 'r').body).toMatchObject({
      status: 400,
      title: 'Bad Request',
      code: 'BAD_REQUEST',
      detail: 'Validation failed (numeric string is expected)',
    });
    expect(toProblem(new ForbiddenException(), '/x', 'r').body).toMatchObject({ status: 403, title: 'Forbidden', code: 'FORBIDDEN', detail: 'Forbidden' });
    // A status with no code of its own is a refusal nobody named: the generic one, not VALIDATION_ERROR.
    expect(toProblem(new ImATeapotException(), '/x', 'r').body).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
    expect(toProblem(new UnprocessableEntityException('bad'), '/x', 'r').body).toMatchObject({ status: 422, code: 'VALIDATION_ERROR' });
    expect(toProblem(new NotImplementedException(), '/x', 'r')).toMatchObject({ body: { status: 500, code: 'INTERNAL_ERROR' }, unexpected: true });
  });

  it('hides everything about an unexpected error', () => {
    const problem = toProblem(new TypeError("Cannot read properties of undefined (reading 'key_hash')"), '/x', 'r');
    expect(problem.unexpected).toBe(true);
    expect(problem.body).toMatchObject({ status: 500, code: 'INTERNAL_ERROR', detail: 'An unexpected error occurred' });
    expect(JSON.stringify(problem.body)).not.toContain('key_hash');
  });

  it('maps Fastify body errors', () => {
    const tooLarge = Object.assign(new Error('Request body is too large'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 });
    expect(toProblem(tooLarge, '/x', 'r').body).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
  });
});

describe('isDatabaseUnavailable', () => {
  it('recognises a refused connection from the real driver', async () => {
    const client = new Client({ host: '127.0.0.1', port: 1, connectionTimeoutMillis: 1000 });
    const error = await client.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it('recognises an administrator shutdown (SQLSTATE 57P01) but not a query error', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }))).toBe(false);
    expect(isDatabaseUnavailable('a string')).toBe(false);
  });
});

describe('databaseFailureOf', () => {
  const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

  it.each([
    [pgError('ECONNREFUSED'), 'unreachable', '5'],
    [new Error('timeout exceeded when trying to connect'), 'saturated', '1'],
    [pgError('57P01', 'terminating connection due to administrator command'), 'session_ended', '1'],
    [new Error('Connection terminated unexpectedly'), 'session_ended', '1'],
    [new QueryRunnerAlreadyReleasedError(), 'session_ended', '1'],
    [pgError('57014', 'canceling statement due to statement timeout'), 'statement_timeout', '5'],
    [new Error('Query read timeout'), 'no_answer', '5'],
    [pgError('55P03', 'canceling statement due to lock timeout'), 'lock_timeout', '1'],
    [pgError('08006', 'connection failure'), 'unreachable', '5'],
    [pgError('25006', 'cannot execute INSERT in a read-only transaction'), 'read_only', '1'],
  ])('names the cause of %p and, once the data layer has said so, answers 503 with its own wording', (error, cause, retryAfter) => {
    expect(databaseFailureOf(error)).toBe(cause);
    const problem = toProblem(asDatabaseUnavailable(error), '/x', 'r');
    expect(problem.body).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect(problem.headers['Retry-After']).toBe(retryAfter);
    expect(problem.unexpected).toBe(false);
  });

  it.each([
    ['GET', '/api/v1/documents/x', 'The database did not answer in time; try again shortly'],
    ['POST', '/api/v1/documents', 'The database did not answer in time; it may have been saved; retrying with the same X-Idempotency-Key is safe'],
    [
      'POST',
      '/api/webhooks/payments/bank',
      'The database did not answer in time; it may have been saved; sending the event again with the same eventId is safe',
    ],
    ['PATCH', '/admin/admins/x', 'The database did not answer in time; the change may have been made; look before trying again'],
    // The API's PATCH and DELETE take no idempotency key: look first, as on /admin.
    ['DELETE', '/api/v1/webhook-endpoints/x', 'The database did not answer in time; the change may have been made; look before trying again'],
  ])('after statements were sent and no answer came, says only what is known: %s %s', (method, path, detail) => {
    const error = asDatabaseUnavailable(new Error('Query read timeout'));
    expect(toProblem(error, path, 'r', requestKindOf(method, path)).body.detail).toBe(detail);
    expect(toProblem(error, path, 'r').body.detail).toMatch(/may have been made/);
    expect(toProblem(asDatabaseUnavailable(new Error('Connection terminated unexpectedly')), path, 'r', requestKindOf(method, path)).body.detail).toBe(
      detail.replace('did not answer in time', 'ended the session during the request'),
    );
  });

  it('says nothing was saved only where PostgreSQL itself stopped the work, and claims nothing where a connection could not be had', () => {
    const detail = (error: unknown) => toProblem(asDatabaseUnavailable(error), '/api/v1/documents', 'r', 'api_write').body.detail;
    expect(detail(pgError('57014', 'canceling statement due to statement timeout'))).toMatch(/; nothing was saved, try again shortly$/);
    expect(detail(pgError('55P03', 'canceling statement due to lock timeout'))).toMatch(/; nothing was saved, try again shortly$/);
    // A standby refuses the write and rolls its transaction back: nothing of the request is on it.
    expect(detail(pgError('25006', 'cannot execute INSERT in a read-only transaction'))).toBe(
      'The database accepts no changes: it is a standby, or a failover is under way; nothing was saved, try again shortly',
    );
    expect(detail(new Error('timeout exceeded when trying to connect'))).toBe(
      'The gateway is saturated: no database connection became free in time; try again shortly',
    );
    expect(detail(pgError('ECONNREFUSED'))).toBe('The database is unreachable; try again shortly');
  });

  it('takes a socket error that did not come from the database (a client that went away) for no database failure', () => {
    expect(toProblem(pgError('ECONNRESET', 'aborted'), '/x', 'r').body.status).toBe(500);
  });

  it('says the gateway is saturated, not that the database is unreachable, when the pool is exhausted', () => {
    const detail = toProblem(asDatabaseUnavailable(new Error('timeout exceeded when trying to connect')), '/x', 'r').body.detail;
    expect(detail).toMatch(/saturated/);
    expect(detail).not.toMatch(/unreachable/);
  });
});

describe('field errors', () => {
  it('are capped at 50', () => {
    const errors = Array.from({ length: 5000 }, (_, i) => ({ field: `k${i}`, message: 'is not an allowed field' }));
    expect(toProblem(AppError.validation(errors), '/x', 'r').body.errors).toHaveLength(50);
  });
});

describe('describeFailure', () => {
  it('names what failed in every warning: a cause, and the driver\u2019s code and message when it has them', () => {
    expect(describeFailure(new Error('timeout expired'))).toEqual({ cause: 'unreachable', message: 'timeout expired' });
    expect(describeFailure(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).toEqual({
      cause: 'unreachable',
      code: 'ECONNREFUSED',
      message: 'connect ECONNREFUSED 127.0.0.1:5432',
    });
    // Not the database's: a bare Error is named by its message, not "Error".
    expect(describeFailure(new Error('Connection is closed.'))).toEqual({ cause: 'Connection is closed.', message: 'Connection is closed.' });
    expect(describeFailure(new TypeError('x is not a function')).cause).toBe('TypeError');
    expect(describeFailure(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })).cause).toBe('unreachable');
  });
});

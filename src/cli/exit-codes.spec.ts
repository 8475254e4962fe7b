import { AppError } from '../common/app-error.js';
import { DatabaseUnavailable } from '../common/database-failure.js';
import { ERROR_STATUS, ErrorCode } from '../common/error-codes.js';
import { ConfigValidationError } from '../config/app-config.js';
import { EmbeddedPostgresError } from '../database/embedded-postgres-layout.js';
import { classify, EXIT, exitCodeOf, flagOf, messageOf, OperatorError, problemOf, UsageError } from './exit-codes.js';

const exitOf = (error: unknown) => exitCodeOf(classify(error));

describe('exit codes', () => {
  it.each<[ErrorCode, number]>([
    ['VALIDATION_ERROR', EXIT.USAGE],
    ['NOT_FOUND', EXIT.NOT_FOUND],
    ['DUPLICATE_ADMIN', EXIT.CONFLICT],
    ['INVALID_STATE_TRANSITION', EXIT.CONFLICT],
    ['SERVICE_UNAVAILABLE', EXIT.DATABASE],
    ['FORBIDDEN', EXIT.FAILED],
    ['INTERNAL_ERROR', EXIT.FAILED],
  ])('maps %s to %i', (code, exit) => {
    expect(exitOf(new AppError(code, 'x'))).toBe(exit);
  });

  it('gives every 409 of the README the conflict code, every 422 the usage code', () => {
    for (const code of Object.keys(ERROR_STATUS) as ErrorCode[]) {
      const exit = exitOf(new AppError(code, 'x'));
      if (ERROR_STATUS[code] === 409) expect([code, exit]).toEqual([code, EXIT.CONFLICT]);
      if (ERROR_STATUS[code] === 422) expect([code, exit]).toEqual([code, EXIT.USAGE]);
    }
  });

  it('treats a database that cannot be used as such, however that shows', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(classify(refused)).toEqual({
      code: 'SERVICE_UNAVAILABLE',
      detail: 'The database could not be reached (ECONNREFUSED); check DATABASE_URL, the PG* variables or DATA_DIR',
    });
    expect(exitOf(new DatabaseUnavailable('unreachable', refused))).toBe(EXIT.DATABASE);
    expect(classify(new DatabaseUnavailable('statement_timeout', {})).detail).toBe(
      'The database stopped a statement that ran past its time limit; nothing was saved, try again shortly',
    );
    expect(classify(new DatabaseUnavailable('no_answer', {})).detail).toBe(
      'The database did not answer in time; the change may have been made; look before trying again',
    );
    expect(exitOf(new OperatorError('schema behind'))).toBe(EXIT.DATABASE);
    expect(exitOf(new EmbeddedPostgresError('There is no embedded database in DATA_DIR /x'))).toBe(EXIT.DATABASE);
  });

  it('fails anything else with 1, saying what it was, on one line', () => {
    const config = classify(new ConfigValidationError(['PORT must be a number', 'LOG_LEVEL must be one of …']));
    expect(exitCodeOf(config)).toBe(EXIT.FAILED);
    expect(messageOf(config)).toBe('error: Invalid configuration: PORT must be a number; LOG_LEVEL must be one of …');
    const odd = classify(new TypeError('boom\n    at somewhere (file.js:1:1)'));
    expect(exitCodeOf(odd)).toBe(EXIT.FAILED);
    expect(odd.detail).toBe('Unexpected failure: boom\n    at somewhere (file.js:1:1)');
    expect(messageOf(odd)).toBe('error: Unexpected failure: boom at somewhere (file.js:1:1)');
  });

  it('names flags, not DTO fields, in validation failures', () => {
    expect(flagOf('expiresAt')).toBe('--expires-at');
    expect(flagOf('gracePeriodSeconds')).toBe('--grace-period-seconds');
    const future = classify(AppError.validation([{ field: 'expiresAt', message: 'must be in the future' }]));
    expect(future).toEqual({
      code: 'VALIDATION_ERROR',
      detail: 'The request is not valid',
      errors: [{ field: '--expires-at', message: 'must be in the future' }],
    });
    expect(messageOf(future)).toBe('error: --expires-at must be in the future');
    const usage = classify(
      new UsageError('bad', [
        { field: '--source', message: 'is wrong' },
        { field: '--name', message: 'too' },
      ]),
    );
    expect(messageOf(usage)).toBe('error: --source is wrong; --name too');
    expect(exitCodeOf(usage)).toBe(EXIT.USAGE);
  });

  it('writes the problem+json object of the README, without the HTTP-only instance and requestId', () => {
    expect(problemOf(classify(new AppError('NOT_FOUND', 'No such API key')))).toEqual({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      code: 'NOT_FOUND',
      detail: 'No such API key',
    });
    expect(problemOf(classify(new UsageError("unknown option '--x'")))).toEqual({
      type: 'about:blank',
      title: 'Unprocessable Content',
      status: 422,
      code: 'VALIDATION_ERROR',
      detail: "unknown option '--x'",
    });
  });
});

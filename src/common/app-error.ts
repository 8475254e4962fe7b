import { ERROR_STATUS, ErrorCode, FieldError } from './error-codes.js';

/** Every failure the gateway means to report; the problem filter turns it into RFC 9457 JSON. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly errors?: FieldError[],
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'AppError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  static validation(errors: FieldError[], detail = 'The request is not valid'): AppError {
    return new AppError('VALIDATION_ERROR', detail, errors);
  }
}

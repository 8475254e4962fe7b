import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { ValidateIf } from 'class-validator';
import { AppError } from './app-error.js';
import { FieldError } from './error-codes.js';
import { findUnstorable, MalformedBody } from './json-body-parser.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Path ids are looked up, not validated: anything that is not a UUID simply matches nothing. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/**
 * An optional body field: it may be left out, but when present it must be valid. Unlike @IsOptional,
 * null is not "left out": `{"gracePeriodSeconds": null}` is a 422, never a silent default.
 */
export function OptionalField(): PropertyDecorator {
  return ValidateIf((_object, value) => value !== undefined);
}

/** class-validator's nested errors as the field paths of the problem body's `errors` (`taxpayer.country`), one message each. */
export function toFieldErrors(errors: ValidationError[], parent = ''): FieldError[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const own = Object.entries(error.constraints ?? {}).map(([rule, message]) => ({
      field,
      message: rule === 'whitelistValidation' ? 'is not an allowed field' : message.replace(new RegExp(`^${error.property} `), ''),
    }));
    return [...own.slice(0, 1), ...toFieldErrors(error.children ?? [], field)];
  });
}

/**
 * The one validation pipe: unknown fields are refused, every bad field is named by its path. It also
 * refuses a body the parser could not use, here and not earlier, so authentication and the
 * idempotency checks come first, and NUL characters or reserved keys in query or path values.
 */
class StrictValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (value instanceof MalformedBody) {
      throw AppError.validation([value.error], value.error.message === 'is not valid JSON' ? 'The request body is not valid JSON' : 'The request is not valid');
    }
    // Without this, a body of `3600`, `"x"` or `null` would validate as an empty DTO.
    if (metadata.type === 'body' && value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value))) {
      throw AppError.validation([{ field: 'body', message: 'must be a JSON object' }]);
    }
    if (metadata.type === 'query' || metadata.type === 'param') {
      const unstorable = findUnstorable(value, metadata.type === 'param' ? metadata.data : '');
      if (unstorable) throw AppError.validation([unstorable]);
    }
    return super.transform(value, metadata);
  }
}

export function createValidationPipe(): ValidationPipe {
  return new StrictValidationPipe({
    transform: true,
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => AppError.validation(toFieldErrors(errors), 'The request is not valid'),
  });
}

import { ValidationError, ValidationPipe } from '@nestjs/common';
import { AppError } from './app-error';
import { FieldError } from './error-codes';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Path ids are looked up, not validated: anything that is not a UUID simply matches nothing. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** class-validator's nested errors as CONTRACT field paths (`taxpayer.country`), one message each. */
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

/** The one validation pipe: unknown fields are refused, every bad field is named by its path. */
export function createValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    transform: true,
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => AppError.validation(toFieldErrors(errors), 'The request is not valid'),
  });
}

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

/** The OptionalField properties of each DTO class, so that a null sent for one is answered as such. */
const OPTIONAL_FIELDS = new WeakMap<object, Set<string | symbol>>();

/**
 * An optional body field: it may be left out, but when present it must be valid. Unlike @IsOptional,
 * null is not "left out": `{"gracePeriodSeconds": null}` is a 422, never a silent default.
 */
export function OptionalField(): PropertyDecorator {
  const validateIf = ValidateIf((_object, value) => value !== undefined);
  return (target, property) => {
    const fields = OPTIONAL_FIELDS.get(target.constructor) ?? new Set();
    OPTIONAL_FIELDS.set(target.constructor, fields.add(property));
    validateIf(target, property);
  };
}

function isOptionalField(target: object | undefined, property: string): boolean {
  for (let type = target?.constructor; type && type !== Object; type = Object.getPrototypeOf(type) as typeof type) {
    if (OPTIONAL_FIELDS.get(type)?.has(property)) return true;
  }
  return false;
}

/**
 * What is wrong with one field, in one message. A missing field, or a null, is said as such rather than
 * by whichever format rule failed first on it. Otherwise the rule written first on the property: it is
 * the most basic one (a string before its length, its length before its pattern), and class-validator
 * lists the rules the other way round.
 */
function fieldMessage(error: ValidationError): string | null {
  const rules = Object.entries(error.constraints ?? {});
  if (rules.length === 0) return null;
  if (rules.some(([rule]) => rule === 'whitelistValidation')) return 'is not an allowed field';
  if (error.value === undefined) return 'is required';
  if (error.value === null) return isOptionalField(error.target, error.property) ? 'must be left out rather than sent as null' : 'is required';
  const [, message] = rules.filter(([rule]) => rule !== 'isDefined').at(-1) ?? rules[0];
  return message.replace(new RegExp(`^${error.property} `), '');
}

/** class-validator's nested errors as the field paths of the problem body's `errors` (`taxpayer.country`), one message each. */
export function toFieldErrors(errors: ValidationError[], parent = ''): FieldError[] {
  return errors.flatMap((error) => {
    const field = parent ? `${parent}.${error.property}` : error.property;
    const message = fieldMessage(error);
    return [...(message === null ? [] : [{ field, message }]), ...toFieldErrors(error.children ?? [], field)];
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
    // The value and the object are read by fieldMessage only; no problem body ever carries them.
    validationError: { target: true, value: true },
    exceptionFactory: (errors) => AppError.validation(toFieldErrors(errors), 'The request is not valid'),
  });
}

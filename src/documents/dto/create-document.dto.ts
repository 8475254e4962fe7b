import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { IsDefined, IsIn, IsObject, IsString, Length, Matches, registerDecorator, ValidateNested, ValidationArguments } from 'class-validator';
import { DOCUMENT_TYPES } from '../document.entity.js';
import type { DocumentType } from '../document.entity.js';
import { SOURCE_PATTERN } from '../../common/source.js';
import { TEXT_PATTERN } from '../../common/json-body-parser.js';
import {
  AMOUNT_PATTERN,
  amountUnits,
  DATE_PATTERN,
  isCalendarDate,
  ISO_COUNTRIES,
  ISO_CURRENCIES,
  METADATA_LIMITS,
  PROVIDER_REFERENCE_PATTERN,
} from '../reference-data.js';
import { OptionalField } from '../../common/validation.js';

function rule(name: string, message: string, test: (value: unknown, args: ValidationArguments) => boolean) {
  return (target: object, propertyName: string) =>
    registerDecorator({ name, target: target.constructor, propertyName, options: { message }, validator: { validate: test } });
}

const isCountry = (v: unknown) => typeof v === 'string' && ISO_COUNTRIES.has(v);
const isCurrency = (v: unknown) => typeof v === 'string' && ISO_CURRENCIES.has(v);
const isDate = (v: unknown) => typeof v === 'string' && isCalendarDate(v);
const isAmount = (v: unknown): v is string => typeof v === 'string' && AMOUNT_PATTERN.test(v);

const IsCountry = () => rule('isCountry', 'must be an ISO 3166-1 alpha-2 country code in upper case', isCountry);
const IsCurrency = () => rule('isCurrency', 'must be an ISO 4217 currency code in upper case', isCurrency);
const IsCalendarDate = () => rule('isCalendarDate', 'must be a real calendar date as YYYY-MM-DD', isDate);
const IsAmount = () => rule('isAmount', 'must be a decimal string with up to 15 digits and 4 decimals, e.g. "119.00"', isAmount);
const NotAboveTotal = () =>
  rule('notAboveTotal', 'must not exceed totalAmount', (v, args) => {
    const total = (args.object as { totalAmount?: unknown }).totalAmount;
    // Only comparable when both are well-formed; each field reports its own format problem otherwise.
    if (!isAmount(v) || !isAmount(total)) return true;
    return amountUnits(v) <= amountUnits(total);
  });
const { entries: MAX_ENTRIES, keyLength: MAX_KEY, valueLength: MAX_VALUE } = METADATA_LIMITS;
function isMetadata(v: unknown): boolean {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const entries = Object.entries(v);
  return (
    entries.length <= MAX_ENTRIES &&
    entries.every(([key, value]) => key.length >= 1 && key.length <= MAX_KEY && typeof value === 'string' && value.length <= MAX_VALUE)
  );
}
const IsMetadata = () =>
  rule(
    'isMetadata',
    `must have at most ${MAX_ENTRIES} keys of at most ${MAX_KEY} characters, each with a string value of at most ${MAX_VALUE} characters`,
    isMetadata,
  );

/**
 * An amount as PostgreSQL's numeric prints it back (the scale kept, leading zeros dropped), so that the
 * answer made from the request reads as every later read of the stored document.
 */
const canonicalAmount = ({ value }: { value: unknown }) => (isAmount(value) ? value.replace(/^0+(?=\d)/, '') : value);

/**
 * Metadata with its keys in the order jsonb keeps them (shorter keys first, then by their UTF-8 bytes),
 * for the same reason: the create's answer and every later read agree byte for byte.
 */
function inJsonbOrder(metadata: unknown): unknown {
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return metadata;
  const bytes = (key: string) => Buffer.from(key, 'utf8');
  const keys = Object.keys(metadata).sort((a, b) => bytes(a).length - bytes(b).length || Buffer.compare(bytes(a), bytes(b)));
  return Object.fromEntries(keys.map((key) => [key, (metadata as Record<string, unknown>)[key]]));
}

/** Longest text of each field, for the decorators and the OpenAPI schema alike. */
const MAX_LENGTH = { externalId: 128, taxId: 64, name: 200, providerReference: 128 } as const;

const COUNTRIES = [...ISO_COUNTRIES].sort();
const CURRENCIES = [...ISO_CURRENCIES].sort();

export class TaxpayerDto {
  @ApiProperty({ example: 'DE123456789', minLength: 1, maxLength: MAX_LENGTH.taxId, pattern: TEXT_PATTERN })
  @IsString()
  @Length(1, MAX_LENGTH.taxId)
  taxId: string;

  @ApiProperty({ example: 'Muster GmbH', minLength: 1, maxLength: MAX_LENGTH.name, pattern: TEXT_PATTERN })
  @IsString()
  @Length(1, MAX_LENGTH.name)
  name: string;

  @ApiProperty({ example: 'DE', enum: COUNTRIES, pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2, upper case' })
  @IsCountry()
  country: string;
}

export class CreateDocumentDto {
  @ApiProperty({
    example: 'acme-erp',
    pattern: SOURCE_PATTERN.source,
    description: "Must equal the API key's own source (`GET /api/v1/me` returns it); any other value is a 401",
  })
  @IsDefined({ message: 'is required' })
  @IsString()
  source: string;

  @ApiProperty({
    example: 'INV-2026-0001',
    minLength: 1,
    maxLength: MAX_LENGTH.externalId,
    pattern: TEXT_PATTERN,
    description: 'Your own id; unique per source',
  })
  @IsString()
  @Length(1, MAX_LENGTH.externalId)
  externalId: string;

  @ApiProperty({ enum: DOCUMENT_TYPES, example: 'INVOICE' })
  @IsIn(DOCUMENT_TYPES, { message: `must be one of ${DOCUMENT_TYPES.join(', ')}` })
  type: DocumentType;

  @ApiProperty({ type: TaxpayerDto })
  @IsDefined({ message: 'is required' })
  @IsObject({ message: 'must be an object' })
  @ValidateNested()
  @Type(() => TaxpayerDto)
  taxpayer: TaxpayerDto;

  @ApiProperty({ example: '2026-11-20', format: 'date', pattern: DATE_PATTERN.source, description: 'A day that exists, as YYYY-MM-DD' })
  @IsCalendarDate()
  issueDate: string;

  @ApiProperty({ example: 'EUR', enum: CURRENCIES, pattern: '^[A-Z]{3}$', description: 'ISO 4217, upper case' })
  @IsCurrency()
  currency: string;

  @ApiProperty({ example: '119.00', pattern: AMOUNT_PATTERN.source, description: 'A decimal string: up to 15 digits and 4 decimals' })
  @IsAmount()
  @Transform(canonicalAmount, { toClassOnly: true })
  totalAmount: string;

  @ApiProperty({ example: '19.00', pattern: AMOUNT_PATTERN.source, description: 'Like totalAmount, and at most totalAmount (else 422)' })
  @IsAmount()
  @NotAboveTotal()
  @Transform(canonicalAmount, { toClassOnly: true })
  taxAmount: string;

  @ApiPropertyOptional({
    example: 'PAY-2026-0001',
    minLength: 1,
    maxLength: MAX_LENGTH.providerReference,
    pattern: PROVIDER_REFERENCE_PATTERN.source,
    description: 'The bank’s payment reference; unique within the source',
  })
  @OptionalField()
  @IsString()
  @Length(1, MAX_LENGTH.providerReference)
  @Matches(PROVIDER_REFERENCE_PATTERN, { message: 'may only contain letters, digits and . _ : / -' })
  providerReference?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', maxLength: MAX_VALUE, pattern: TEXT_PATTERN },
    maxProperties: MAX_ENTRIES,
    example: { costCenter: 'CC-42' },
    description: `Your own string values, kept as sent: at most ${MAX_ENTRIES} keys of 1 to ${MAX_KEY} characters (not \`constructor\`, \`__proto__\` or \`prototype\`)`,
  })
  @OptionalField()
  @IsMetadata()
  // Taken from the request itself: class-transformer skips keys that name object methods, such as "toString".
  @Transform(({ obj }) => inJsonbOrder((obj as { metadata?: unknown }).metadata), { toClassOnly: true })
  metadata?: Record<string, string>;
}

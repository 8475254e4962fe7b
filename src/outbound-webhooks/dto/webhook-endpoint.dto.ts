import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  ArrayUnique,
  IsArray,
  IsBoolean,
  IsIn,
  IsString,
  Length,
  MaxLength,
  registerDecorator,
  ValidateIf,
} from 'class-validator';
import { OptionalField } from '../../common/validation.js';
import { endpointUrlProblem, MAX_URL_LENGTH } from '../endpoint-url.js';
import { OUTBOUND_EVENT_TYPES } from '../webhook-endpoint.entity.js';
import type { DisabledReason, OutboundEventType } from '../webhook-endpoint.entity.js';

const EVENT_TYPES_MESSAGE = `must be a non-empty list of distinct values from ${OUTBOUND_EVENT_TYPES.join(', ')}`;

/** The one rule for `eventTypes`, on creation and on PATCH alike. */
const EventTypes = () =>
  applyDecorators(
    OptionalField(),
    IsArray({ message: EVENT_TYPES_MESSAGE }),
    ArrayNotEmpty({ message: EVENT_TYPES_MESSAGE }),
    ArrayMaxSize(OUTBOUND_EVENT_TYPES.length, { message: EVENT_TYPES_MESSAGE }),
    ArrayUnique({ message: EVENT_TYPES_MESSAGE }),
    IsIn(OUTBOUND_EVENT_TYPES, { each: true, message: EVENT_TYPES_MESSAGE }),
  );

/** The URL rules that need no configuration nor DNS, checked with the other fields; the service checks the rest. */
const IsEndpointUrl = (): PropertyDecorator => (target, propertyName) =>
  registerDecorator({
    name: 'isEndpointUrl',
    target: target.constructor,
    propertyName: String(propertyName),
    options: { message: ({ value }) => (typeof value === 'string' ? (endpointUrlProblem(value) ?? '') : '') },
    validator: { validate: (value: unknown) => typeof value !== 'string' || endpointUrlProblem(value) === null },
  });

const UrlProperty = () =>
  ApiProperty({
    example: 'https://erp.example.com/hooks/tax-gateway',
    maxLength: MAX_URL_LENGTH,
    description: 'Absolute https:// URL without credentials, resolving to public addresses only',
  });

export class CreateWebhookEndpointDto {
  @UrlProperty()
  @IsString()
  @MaxLength(MAX_URL_LENGTH)
  @IsEndpointUrl()
  url: string;

  @ApiPropertyOptional({ example: 'ERP production receiver', maxLength: 500 })
  @OptionalField()
  @IsString()
  @Length(1, 500)
  description?: string;

  @ApiPropertyOptional({ enum: OUTBOUND_EVENT_TYPES, isArray: true, minItems: 1, uniqueItems: true, description: 'The event types to receive; absent: all' })
  @EventTypes()
  eventTypes?: OutboundEventType[];
}

export class UpdateWebhookEndpointDto {
  @ApiPropertyOptional({ example: 'https://erp.example.com/hooks/tax-gateway', maxLength: MAX_URL_LENGTH })
  @OptionalField()
  @IsString()
  @MaxLength(MAX_URL_LENGTH)
  @IsEndpointUrl()
  url?: string;

  @ApiPropertyOptional({ nullable: true, type: String, maxLength: 500, description: 'null clears it' })
  @ValidateIf((_, value) => value !== null && value !== undefined)
  @IsString()
  @Length(1, 500)
  description?: string | null;

  @ApiPropertyOptional({ enum: OUTBOUND_EVENT_TYPES, isArray: true, minItems: 1, uniqueItems: true })
  @EventTypes()
  eventTypes?: OutboundEventType[];

  @ApiPropertyOptional({
    description:
      'false stops deliveries (disabledReason "client"); true resumes them and clears any disabledReason but "admin" (a 409: only the operator lifts it)',
  })
  @OptionalField()
  @IsBoolean()
  enabled?: boolean;
}

export class WebhookEndpointResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'https://erp.example.com/hooks/tax-gateway' }) url: string;
  @ApiProperty({ nullable: true, type: String }) description: string | null;
  @ApiProperty({ enum: OUTBOUND_EVENT_TYPES, isArray: true }) eventTypes: OutboundEventType[];
  @ApiProperty() enabled: boolean;
  @ApiProperty({
    nullable: true,
    enum: ['gone', 'failing', 'client', 'admin'],
    description:
      '"gone": the receiver answered 410; "failing": no successful delivery for 5 days; "client": disabled by PATCH; ' +
      '"admin": stopped by the gateway\'s operator, who alone can enable it again (a PATCH of `enabled` is then a 409)',
  })
  disabledReason: DisabledReason | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class WebhookEndpointWithSecretDto extends WebhookEndpointResponseDto {
  @ApiProperty({ example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', description: 'The signing secret. Shown here only, never by a GET.' })
  secret: string;
}

export class WebhookEndpointListDto {
  @ApiProperty({ type: [WebhookEndpointResponseDto] }) data: WebhookEndpointResponseDto[];
}

export class AdminWebhookEndpointDto extends WebhookEndpointResponseDto {
  @ApiProperty({ example: 'acme-erp' }) source: string;
}

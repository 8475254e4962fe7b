import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDateString, IsIn, IsInt, IsOptional, IsString, IsUUID, Length, Matches, Max, Min } from 'class-validator';
import { TEXT_PATTERN } from '../../common/json-body-parser.js';
import { NEXT_CURSOR, PageQueryDto } from './admin.dto.js';
import { OptionalField } from '../../common/validation.js';
import { SOURCE_PATTERN, SOURCE_RULE } from '../../common/source.js';
import { BANK_EVENT_OUTCOMES } from '../../documents/bank-event.entity.js';
import type { BankEventOutcome } from '../../documents/bank-event.entity.js';

export class CreateApiKeyDto {
  @ApiProperty({ example: 'acme-erp', pattern: SOURCE_PATTERN.source, description: 'The client application the key acts for' })
  @IsString()
  @Matches(SOURCE_PATTERN, { message: SOURCE_RULE })
  source: string;

  @ApiPropertyOptional({ example: 'ERP production', minLength: 1, maxLength: 200, pattern: TEXT_PATTERN, description: 'For people: what the key is for' })
  @OptionalField()
  @IsString()
  @Length(1, 200)
  name?: string;

  @ApiPropertyOptional({ format: 'date-time', example: '2027-12-31T00:00:00.000Z', description: 'ISO 8601, in the future; absent: never expires' })
  @OptionalField()
  @IsDateString({ strict: true }, { message: 'must be an ISO 8601 date-time' })
  expiresAt?: string;
}

export class RotateApiKeyDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 86400, default: 0, description: 'Seconds the old key keeps working' })
  @OptionalField()
  @IsInt()
  @Min(0)
  @Max(86400)
  gracePeriodSeconds?: number;
}

export class ListApiKeysQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ example: 'acme-erp', pattern: SOURCE_PATTERN.source, description: 'Only those of this source' })
  @IsOptional()
  @IsString()
  @Matches(SOURCE_PATTERN, { message: 'must be a valid source' })
  source?: string;
}

export class WebhookEventsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: BANK_EVENT_OUTCOMES, description: 'Only events with this outcome' })
  @IsOptional()
  @IsIn(BANK_EVENT_OUTCOMES, { message: `must be one of ${BANK_EVENT_OUTCOMES.join(', ')}` })
  status?: BankEventOutcome;

  @ApiPropertyOptional({ example: 'PAY-2026-0001', minLength: 1, maxLength: 255, description: 'Only events for this providerReference' })
  @IsOptional()
  @IsString()
  @Length(1, 255)
  providerReference?: string;
}

export class ApiKeyResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'acme-erp' }) source: string;
  @ApiProperty({ nullable: true, type: String, example: 'ERP production' }) name: string | null;
  @ApiProperty({ example: 'sk_tax_4fQ9a', description: "The key's first 12 characters" }) prefix: string;
  @ApiProperty({ example: 'x9Qz', description: "The key's last 4 characters" }) last4: string;
  @ApiProperty({ enum: ['ACTIVE', 'REVOKED', 'EXPIRED'], description: 'A rotated key stays ACTIVE until its grace period ends' }) status: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) expiresAt: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) revokedAt: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time', description: 'Recorded in batches; may lag a few seconds' })
  lastUsedAt: string | null;
}

export class IssuedApiKeyResponseDto extends ApiKeyResponseDto {
  @ApiProperty({ example: 'sk_tax_4fQ9a…', description: 'The key itself. Shown once, never again.' }) key: string;
}

export class ApiKeyListDto {
  @ApiProperty({ type: [ApiKeyResponseDto] }) data: ApiKeyResponseDto[];
  @ApiProperty(NEXT_CURSOR) nextCursor: string | null;
}

export class WebhookEventDto {
  @ApiProperty({ example: 'evt_000123' }) eventId: string;
  @ApiProperty({ example: 'PAYMENT_STATUS' }) eventType: string;
  @ApiProperty({ example: 'PAID', description: 'The status as the bank sent it' }) status: string;
  @ApiProperty({ example: 'PAY-2026-0001' }) providerReference: string;
  @ApiProperty({ enum: BANK_EVENT_OUTCOMES, description: 'What the delivery did' }) outcome: string;
  @ApiProperty({ nullable: true, type: String, format: 'uuid', description: 'The document it concerned, once there is one' }) documentId: string | null;
  @ApiProperty({ format: 'date-time' }) receivedAt: string;
}

export class WebhookEventPageDto {
  @ApiProperty({ type: [WebhookEventDto] }) data: WebhookEventDto[];
  @ApiProperty(NEXT_CURSOR) nextCursor: string | null;
}

export class ApplyWebhookEventDto {
  @ApiProperty({ format: 'uuid', description: "The document to apply the event to: one of the documents with the event's providerReference" })
  @IsUUID('all', { message: 'must be a UUID' })
  documentId: string;
}

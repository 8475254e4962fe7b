import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDateString, IsIn, IsInt, IsOptional, IsString, Length, Matches, Max, Min } from 'class-validator';
import { PageLimit } from '../../common/page-limit';
import { WEBHOOK_OUTCOMES } from '../../webhooks/webhook-event.entity';
import type { WebhookOutcome } from '../../webhooks/webhook-event.entity';

export const SOURCE_PATTERN = /^[a-z0-9][a-z0-9-]{1,62}$/;

export class CreateApiKeyDto {
  @ApiProperty({ example: 'acme-erp', pattern: SOURCE_PATTERN.source })
  @IsString()
  @Matches(SOURCE_PATTERN, { message: 'must be 2-63 characters of a-z, 0-9 and -, starting with a letter or digit' })
  source: string;

  @ApiPropertyOptional({ example: 'ERP production', maxLength: 200 })
  @IsOptional()
  @IsString()
  @Length(1, 200)
  name?: string;

  @ApiPropertyOptional({ format: 'date-time', example: '2027-12-31T00:00:00.000Z' })
  @IsOptional()
  @IsDateString({ strict: true }, { message: 'must be an ISO 8601 date-time' })
  expiresAt?: string;
}

export class RotateApiKeyDto {
  @ApiPropertyOptional({ minimum: 0, maximum: 86400, default: 0, description: 'How long the old key keeps working' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(86400)
  gracePeriodSeconds?: number;
}

export class ListApiKeysQueryDto {
  @ApiPropertyOptional({ example: 'acme-erp' })
  @IsOptional()
  @IsString()
  @Matches(SOURCE_PATTERN, { message: 'must be a valid source' })
  source?: string;
}

export class LimitQueryDto {
  @PageLimit(200, 50)
  limit?: number;
}

export class WebhookEventsQueryDto extends LimitQueryDto {
  @ApiPropertyOptional({ enum: WEBHOOK_OUTCOMES, description: 'Only events with this outcome' })
  @IsOptional()
  @IsIn(WEBHOOK_OUTCOMES, { message: `must be one of ${WEBHOOK_OUTCOMES.join(', ')}` })
  status?: WebhookOutcome;
}

export class ApiKeyResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'acme-erp' }) source: string;
  @ApiProperty({ nullable: true, type: String }) name: string | null;
  @ApiProperty({ example: 'sk_tax_4fQ9a' }) prefix: string;
  @ApiProperty({ example: 'x9Qz' }) last4: string;
  @ApiProperty({ enum: ['ACTIVE', 'REVOKED', 'EXPIRED'] }) status: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) expiresAt: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) revokedAt: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time', description: 'Recorded in batches; may lag a few seconds' })
  lastUsedAt: string | null;
}

export class IssuedApiKeyResponseDto extends ApiKeyResponseDto {
  @ApiProperty({ example: 'sk_tax_4fQ9a…', description: 'The key itself. Shown once, never again.' }) key: string;
}

import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Length, Matches, Max, Min } from 'class-validator';
import { SOURCE_PATTERN } from '../../common/source.js';
import { DocumentEventDto } from '../../documents/dto/document-event.dto.js';
import { DOCUMENT_TYPES } from '../../documents/document.entity.js';
import type { DocumentType } from '../../documents/document.entity.js';
import { DocumentResponseDto } from '../../documents/dto/document-response.dto.js';
import { DOCUMENT_STATUSES } from '../../documents/lifecycle.js';
import type { DocumentStatus } from '../../documents/lifecycle.js';
import { AdminDeliveryDto } from '../../outbound-webhooks/dto/delivery.dto.js';
import { AdminWebhookEndpointDto } from '../../outbound-webhooks/dto/webhook-endpoint.dto.js';
import { NEXT_CURSOR, PageQueryDto } from './admin.dto.js';

export class AdminEndpointsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ example: 'acme-erp', pattern: SOURCE_PATTERN.source, description: 'Only those of this source' })
  @IsOptional()
  @IsString()
  @Matches(SOURCE_PATTERN, { message: 'must be a valid source' })
  source?: string;
}

export class AdminWebhookEndpointPageDto {
  @ApiProperty({ type: [AdminWebhookEndpointDto] }) data: AdminWebhookEndpointDto[];
  @ApiProperty(NEXT_CURSOR) nextCursor: string | null;
}

export class SetEndpointEnabledDto {
  @ApiProperty({ description: 'false stops its deliveries (disabledReason "admin"; the client cannot undo it); true resumes them' })
  @IsBoolean({ message: 'must be true or false' })
  enabled: boolean;
}

export class AdminDocumentsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ example: 'acme-erp', pattern: SOURCE_PATTERN.source, description: 'Documents of this source (this or providerReference is required)' })
  @IsOptional()
  @IsString()
  @Matches(SOURCE_PATTERN, { message: 'must be a valid source' })
  source?: string;

  @ApiPropertyOptional({
    example: 'PAY-2026-0001',
    minLength: 1,
    maxLength: 255,
    description: 'Documents with this providerReference, of every source unless `source` is given',
  })
  @IsOptional()
  @IsString()
  @Length(1, 255)
  providerReference?: string;

  @ApiPropertyOptional({ enum: DOCUMENT_STATUSES })
  @IsOptional()
  @IsIn(DOCUMENT_STATUSES, { message: `must be one of ${DOCUMENT_STATUSES.join(', ')}` })
  status?: DocumentStatus;

  @ApiPropertyOptional({ enum: DOCUMENT_TYPES })
  @IsOptional()
  @IsIn(DOCUMENT_TYPES, { message: `must be one of ${DOCUMENT_TYPES.join(', ')}` })
  type?: DocumentType;

  @ApiPropertyOptional({ example: 'INV-2026-0001', minLength: 1, maxLength: 128, description: 'With `source`: the document with this externalId' })
  @IsOptional()
  @IsString()
  @Length(1, 128)
  externalId?: string;
}

export class AdminDocumentPageDto {
  @ApiProperty({ type: [DocumentResponseDto] }) data: DocumentResponseDto[];
  @ApiProperty(NEXT_CURSOR) nextCursor: string | null;
}

export class ReferenceClaimDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'other-erp' }) source: string;
  @ApiProperty({ example: 'INV-2026-0042' }) externalId: string;
  @ApiProperty({ enum: DOCUMENT_STATUSES }) status: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ description: 'A bank event has been applied to it: the reference is established for it' }) receivedBankEvents: boolean;
}

export class AdminDocumentDetailDto {
  @ApiProperty({ type: DocumentResponseDto }) document: DocumentResponseDto;
  @ApiProperty({ type: [DocumentEventDto], description: 'Its feed events, oldest first' }) events: DocumentEventDto[];
  @ApiProperty({ type: [AdminDeliveryDto], description: 'Push deliveries of those events, newest first (the first 50)' }) deliveries: AdminDeliveryDto[];
  @ApiProperty({ nullable: true, type: String, description: 'More deliveries: GET /admin/outbound-deliveries?documentId=…&cursor=…' })
  deliveriesNextCursor: string | null;
  @ApiProperty({
    nullable: true,
    type: String,
    format: 'uuid',
    description:
      "The document the bank's events for its providerReference go to, this one or another source's: the one a bank event has been applied to " +
      '(established), else the only one with the reference. null when it has no providerReference, or when several documents claim the ' +
      'reference and none has had a bank event applied (or several have, through administrators), so its events are held as ambiguous.',
  })
  bankEventsGoTo: string | null;
  @ApiProperty({
    type: [ReferenceClaimDto],
    description:
      'The documents of other sources with the same providerReference (established first, then oldest first; at most 50). One created after ' +
      "the reference was established for another document is a later claim: it gets none of the reference's bank events.",
  })
  referenceClaims: ReferenceClaimDto[];
}

export class StatsQueryDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 48, default: 3, description: 'How many hours back, 1 to 48' })
  @IsOptional()
  @Type(() => Number)
  @IsInt({ message: 'must be an integer from 1 to 48' })
  @Min(1, { message: 'must be an integer from 1 to 48' })
  @Max(48, { message: 'must be an integer from 1 to 48' })
  hours?: number;
}

export class DeliveryBucketDto {
  @ApiProperty({ format: 'date-time', description: "The bucket's start" }) at: string;
  @ApiProperty({ example: 12, description: 'Attempts answered with a 2xx' }) succeeded: number;
  @ApiProperty({ example: 2, description: 'Attempts that failed (an error or another status) and were followed by another attempt, made or due' })
  retried: number;
  @ApiProperty({ example: 1, description: "Attempts that failed and were their delivery's last: it failed, no attempts left" }) failed: number;
}

export class DeliveryStatsDto {
  @ApiProperty({ example: 1, description: 'Minutes per bucket: 1 up to 3 hours back, more beyond' }) bucketMinutes: number;
  @ApiProperty({ type: [DeliveryBucketDto], description: 'Oldest first; a bucket without attempts is left out' }) data: DeliveryBucketDto[];
}

export class BankEventBucketDto {
  @ApiProperty({ format: 'date-time' }) at: string;
  @ApiPropertyOptional({ example: 40 }) applied?: number;
  @ApiPropertyOptional() unmatched?: number;
  @ApiPropertyOptional() ignored?: number;
  @ApiPropertyOptional() duplicate?: number;
  @ApiPropertyOptional() ambiguous?: number;
}

export class BankEventStatsDto {
  @ApiProperty({ example: 1 }) bucketMinutes: number;
  @ApiProperty({ type: [BankEventBucketDto], description: 'Oldest first; an outcome without events in a bucket is left out' }) data: BankEventBucketDto[];
}

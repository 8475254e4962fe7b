import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsOptional, IsString, IsUUID, Matches } from 'class-validator';
import { SOURCE_PATTERN } from '../../common/source.js';
import { CursorParameter } from '../../common/cursor.js';
import { PageLimit } from '../../common/page-limit.js';
import { DELIVERY_STATUSES } from '../outbound-delivery.entity.js';
import type { DeliveryStatus } from '../outbound-delivery.entity.js';

const STATUS_MESSAGE = `must be one of ${DELIVERY_STATUSES.join(', ')}`;

export class ListDeliveriesQueryDto {
  @ApiPropertyOptional({ enum: DELIVERY_STATUSES })
  @IsOptional()
  @IsIn(DELIVERY_STATUSES, { message: STATUS_MESSAGE })
  status?: DeliveryStatus;

  @PageLimit(100, 20)
  limit?: number;

  @CursorParameter('The nextCursor of the previous page')
  cursor?: string;
}

export class AdminDeliveriesQueryDto {
  @ApiPropertyOptional({ example: 'acme-erp' })
  @IsOptional()
  @IsString()
  @Matches(SOURCE_PATTERN, { message: 'must be a valid source' })
  source?: string;

  @ApiPropertyOptional({ enum: DELIVERY_STATUSES })
  @IsOptional()
  @IsIn(DELIVERY_STATUSES, { message: STATUS_MESSAGE })
  status?: DeliveryStatus;

  @ApiPropertyOptional({
    type: Boolean,
    description: 'true: only the deliveries that need a look, failed or still pending after a failed attempt (failing right now)',
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean({ message: 'must be true or false' })
  attention?: boolean;

  @ApiPropertyOptional({ format: 'uuid', description: "Only the deliveries of this document's events" })
  @IsOptional()
  @IsUUID('all', { message: 'must be a UUID' })
  documentId?: string;

  @PageLimit(200, 50)
  limit?: number;

  @CursorParameter('The nextCursor of the previous page')
  cursor?: string;
}

export class DeliveryResponseDto {
  @ApiProperty({ example: '1017' }) id: string;
  @ApiProperty({ example: '42', description: 'The feed event id; also the `webhook-id` header of every attempt' }) eventId: string;
  @ApiProperty({ enum: ['document.created', 'document.status_changed'] }) eventType: string;
  @ApiProperty({ enum: DELIVERY_STATUSES }) status: DeliveryStatus;
  @ApiProperty({ example: 1 }) attempts: number;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) lastAttemptAt: string | null;
  @ApiProperty({ nullable: true, type: Number, example: 200 }) lastResponseStatus: number | null;
  @ApiProperty({
    nullable: true,
    type: String,
    example: 'timeout',
    description: 'Why the last attempt failed: timeout, blocked_address, dns_failure, connection_failed, tls_failure, redirect, http_error',
  })
  lastError: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time', description: 'null once succeeded or failed' }) nextAttemptAt: string | null;
}

export class DeliveryPageDto {
  @ApiProperty({ type: [DeliveryResponseDto] }) data: DeliveryResponseDto[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last page' })
  nextCursor: string | null;
}

export class AdminDeliveryDto extends DeliveryResponseDto {
  @ApiProperty({ example: 'acme-erp' }) source: string;
  @ApiProperty({ format: 'uuid' }) endpointId: string;
  @ApiProperty({ example: 'https://erp.example.com/hooks/tax-gateway' }) endpointUrl: string;
  @ApiProperty({ nullable: true, type: String, format: 'uuid', description: 'The document the event is about (null once the event is purged)' })
  documentId: string | null;
}

export class AdminDeliveryPageDto {
  @ApiProperty({ type: [AdminDeliveryDto] }) data: AdminDeliveryDto[];
  @ApiProperty({ nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last page' })
  nextCursor: string | null;
}

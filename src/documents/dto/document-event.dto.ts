import { ApiProperty } from '@nestjs/swagger';
import { DOCUMENT_STATUSES } from '../lifecycle.js';

/** An event of the feed, as GET /api/v1/events lists it and push deliveries send it. */
export class DocumentEventDto {
  @ApiProperty({
    example: '42',
    description: 'Unique per event. The feed is in commit-safe order, which can differ from id order for events written at the same time',
  })
  id: string;
  @ApiProperty({ enum: ['document.created', 'document.status_changed'] }) type: string;
  @ApiProperty({ format: 'uuid' }) documentId: string;
  @ApiProperty({ enum: DOCUMENT_STATUSES }) status: string;
  // A nullable enum lists null too (OpenAPI 3.0.3), or validators refuse the null of a creation event.
  @ApiProperty({ enum: [...DOCUMENT_STATUSES, null], nullable: true, description: 'null for document.created' }) previousStatus: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

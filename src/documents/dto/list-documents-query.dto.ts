import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Length } from 'class-validator';
import { TEXT_PATTERN } from '../../common/json-body-parser.js';
import { CursorParameter } from '../../common/cursor.js';
import { PageLimit } from '../../common/page-limit.js';
import { DOCUMENT_TYPES } from '../document.entity.js';
import type { DocumentType } from '../document.entity.js';
import { DOCUMENT_STATUSES } from '../lifecycle.js';
import type { DocumentStatus } from '../lifecycle.js';

export class ListDocumentsQueryDto {
  @ApiPropertyOptional({ enum: DOCUMENT_STATUSES, description: 'Only documents in this status' })
  @IsOptional()
  @IsIn(DOCUMENT_STATUSES, { message: `must be one of ${DOCUMENT_STATUSES.join(', ')}` })
  status?: DocumentStatus;

  @ApiPropertyOptional({ enum: DOCUMENT_TYPES, description: 'Only documents of this type' })
  @IsOptional()
  @IsIn(DOCUMENT_TYPES, { message: `must be one of ${DOCUMENT_TYPES.join(', ')}` })
  type?: DocumentType;

  @ApiPropertyOptional({ example: 'INV-2026-0001', minLength: 1, maxLength: 128, pattern: TEXT_PATTERN, description: 'Only the document with this externalId' })
  @IsOptional()
  @IsString()
  @Length(1, 128)
  externalId?: string;

  @PageLimit(100, 20)
  limit?: number;

  @CursorParameter('The nextCursor of the previous page')
  cursor?: string;
}

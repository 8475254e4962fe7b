import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { TEXT_PATTERN } from '../../common/json-body-parser';
import { PageLimit } from '../../common/page-limit';

export class ListEventsQueryDto {
  @ApiPropertyOptional({
    pattern: TEXT_PATTERN,
    description: 'Resume after this cursor (the nextCursor of the previous call); omit to start from the beginning; any other value is a 422',
  })
  @IsOptional()
  @IsString()
  after?: string;

  @PageLimit(100, 20)
  limit?: number;
}

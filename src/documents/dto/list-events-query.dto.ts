import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { cursorProperty, FEED_CURSOR_PATTERN } from '../../common/cursor';
import { PageLimit } from '../../common/page-limit';

export class ListEventsQueryDto {
  @ApiPropertyOptional(cursorProperty('Resume after this cursor (the nextCursor of the previous call); omit to start from the beginning', FEED_CURSOR_PATTERN))
  @IsOptional()
  @IsString()
  after?: string;

  @PageLimit(100, 20)
  limit?: number;
}

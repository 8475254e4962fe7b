import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import { PageLimit } from '../../common/page-limit';

export class ListEventsQueryDto {
  @ApiPropertyOptional({ description: 'Resume after this cursor (the nextCursor of the previous call); omit to start from the beginning' })
  @IsOptional()
  @IsString()
  after?: string;

  @PageLimit(100, 20)
  limit?: number;
}

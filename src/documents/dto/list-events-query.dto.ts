import { CursorParameter, FEED_CURSOR_PATTERN } from '../../common/cursor';
import { PageLimit } from '../../common/page-limit';

export class ListEventsQueryDto {
  @CursorParameter('Resume after this cursor (the nextCursor of the previous call); omit to start from the beginning', FEED_CURSOR_PATTERN)
  after?: string;

  @PageLimit(100, 20)
  limit?: number;
}

import { CursorParameter, FEED_CURSOR_PATTERN } from '../../common/cursor.js';
import { PageLimit } from '../../common/page-limit.js';

export class ListEventsQueryDto {
  @CursorParameter('Resume after this cursor (the nextCursor of the previous call); omit to start from the beginning', FEED_CURSOR_PATTERN)
  after?: string;

  @PageLimit(100, 20)
  limit?: number;
}

import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from '../auth/authenticated-key.js';
import type { AuthenticatedKey } from '../auth/authenticated-key.js';
import { ApiProblems } from '../common/problem.dto.js';
import { DocumentEventsService, EventPage } from './document-events.service.js';
import { ListEventsQueryDto } from './dto/list-events-query.dto.js';
import { DocumentEventDto } from './dto/document-event.dto.js';

class EventPageDto {
  @ApiProperty({ type: [DocumentEventDto] }) data: DocumentEventDto[];
  @ApiProperty({ nullable: true, type: String, description: 'Where to resume (pass as `after`); null only while the source has no events' })
  nextCursor: string | null;
  @ApiProperty({ description: 'Whether more events follow right now' }) hasMore: boolean;
}

@ApiTags('events')
@Controller('api/v1/events')
export class EventsController {
  constructor(private readonly events: DocumentEventsService) {}

  @Get()
  @ApiOperation({
    operationId: 'listEvents',
    summary: "Read the source's event feed",
    description:
      'One event per document creation and status change, oldest first. Keep `nextCursor` and pass it as `after` to resume: paging this way sees every event exactly once, even while events are being written: an event is shown only once every transaction older than its own has finished, so events written at the same time can come in another order than their ids.',
  })
  @ApiOkResponse({ type: EventPageDto })
  @ApiProblems('VALIDATION_ERROR')
  list(@CurrentKey() key: AuthenticatedKey, @Query() query: ListEventsQueryDto): Promise<EventPage> {
    return this.events.list(key.source, query.after, query.limit ?? 20);
  }
}

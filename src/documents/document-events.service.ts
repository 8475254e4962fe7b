import { Injectable } from '@nestjs/common';
import { decodeCursor, encodeCursor } from '../common/cursor';
import { Database, statement } from '../database/database';
import { DocumentEventType } from './document-event.entity';
import type { DocumentStatus } from './lifecycle';

export interface DocumentEventView {
  id: string;
  type: DocumentEventType;
  documentId: string;
  status: DocumentStatus;
  previousStatus: DocumentStatus | null;
  createdAt: string;
}

export interface EventPage {
  data: DocumentEventView[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Event ids come from a sequence, handed out in insert order, not commit order: paging by id alone
 * could skip an event whose transaction commits late. So each event carries its transaction id
 * (column default pg_current_xact_id()), the feed is ordered by (xid, id), and only events of
 * transactions older than every transaction still running are returned: nothing can appear later
 * before the cursor. Legacy cursors (an event id alone) resume after that event's position.
 */
const PAGE = statement(
  'document-event-page',
  `SELECT id, type, document_id AS "documentId", status, previous_status AS "previousStatus", created_at AS "createdAt",
          xid::text AS xid
     FROM document_events
    WHERE source = $1
      AND xid < pg_snapshot_xmin(pg_current_snapshot())
      AND (xid, id) > (COALESCE($2::xid8, (SELECT e.xid FROM document_events e WHERE e.id = $3::bigint), '0'::xid8), $3::bigint)
    ORDER BY xid, id
    LIMIT $4`,
);

interface EventRow extends Omit<DocumentEventView, 'createdAt'> {
  createdAt: Date;
  xid: string;
}

/** `x` (transaction id) and `e` (event id) cursors joined by a dot, which base64url never contains. */
function feedCursor(row: EventRow): string {
  return `${encodeCursor('x', row.xid)}.${encodeCursor('e', row.id)}`;
}

function decodeFeedCursor(after: string): { xid: string | null; id: string } {
  const parts = after.split('.');
  if (parts.length === 2) return { xid: decodeCursor('x', parts[0], 'after'), id: decodeCursor('e', parts[1], 'after') };
  return { xid: null, id: decodeCursor('e', after, 'after') };
}

@Injectable()
export class DocumentEventsService {
  constructor(private readonly db: Database) {}

  async list(source: string, after: string | undefined, limit: number): Promise<EventPage> {
    const position = after ? decodeFeedCursor(after) : { xid: '0', id: '0' };
    const rows = await this.db.query<EventRow>(PAGE, [source, position.xid, position.id, limit + 1]);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      data: page.map((e) => ({
        id: e.id,
        type: e.type,
        documentId: e.documentId,
        status: e.status,
        previousStatus: e.previousStatus,
        createdAt: e.createdAt.toISOString(),
      })),
      nextCursor: last ? feedCursor(last) : (after ?? null),
      hasMore: rows.length > limit,
    };
  }
}

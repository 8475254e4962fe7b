import { Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { sql } from '../database/sql';
import type { DocumentEventType } from './document-event.entity';
import type { DocumentStatus } from './lifecycle';

export interface FeedRow {
  id: string;
  type: DocumentEventType;
  documentId: string;
  status: DocumentStatus;
  previousStatus: DocumentStatus | null;
  createdAt: Date;
  /** The writing transaction's id (xid8, as text). */
  xid: string;
}

/**
 * Event ids come from a sequence, handed out in insert order, not commit order: paging by id alone could
 * skip an event whose transaction commits late. So each event carries its transaction id (column default
 * pg_current_xact_id()), the feed is ordered by (xid, id), and only events of transactions older than
 * every transaction still running are returned: nothing can appear later before the cursor. $2 null with
 * $3 an event id: a legacy cursor, resumed after that event's position. The ORDER BY names the table's
 * columns: a bare `xid` would be the text of the select list, which sorts 1000 before 999.
 */
const PAGE = sql(
  'document-event-page',
  `SELECT e.id, e.type, e.document_id AS "documentId", e.status, e.previous_status AS "previousStatus", e.created_at AS "createdAt",
          e.xid::text AS xid
     FROM document_events e
    WHERE e.source = $1
      AND e.xid < pg_snapshot_xmin(pg_current_snapshot())
      AND (e.xid, e.id) > (COALESCE($2::xid8, (SELECT c.xid FROM document_events c WHERE c.id = $3::bigint), '0'::xid8), $3::bigint)
    ORDER BY e.xid, e.id
    LIMIT $4`,
);

/** A document's events, oldest first. */
const OF_DOCUMENT = sql(
  'document-event-of-document',
  `SELECT id, type, document_id AS "documentId", status, previous_status AS "previousStatus", created_at AS "createdAt"
     FROM document_events WHERE document_id = $1 ORDER BY id`,
);

/** The documents these events are about. */
const DOCUMENTS_OF = sql('document-event-documents-of', `SELECT id, document_id AS "documentId" FROM document_events WHERE id = ANY($1::bigint[])`);

/** The event feed's queries over document_events (the events themselves are written with their documents). */
@Injectable()
export class DocumentEventsRepository {
  constructor(private readonly db: Database) {}

  /** Up to `limit` events of `source` after the position (`xid`, `id`), oldest first. */
  page(source: string, after: { xid: string | null; id: string }, limit: number): Promise<FeedRow[]> {
    return this.db.query<FeedRow>(PAGE, [source, after.xid, after.id, limit]);
  }

  ofDocument(documentId: string): Promise<Array<Omit<FeedRow, 'xid'>>> {
    return this.db.query(OF_DOCUMENT, [documentId]);
  }

  documentsOf(eventIds: string[]): Promise<Array<{ id: string; documentId: string }>> {
    return this.db.query(DOCUMENTS_OF, [eventIds]);
  }
}

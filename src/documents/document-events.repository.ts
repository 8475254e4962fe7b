import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, In, Repository } from 'typeorm';
import { arraysOf, selectColumns, unnestColumnsOf } from '../database/entity-sql.js';
import { PurgeBatch, PurgeRange } from '../database/purge-batch.js';
import { PreparedStatement } from '../database/prepared-statement.js';
import { rowsOf, Transaction } from '../database/transaction.js';
import type { NewDocumentEvent } from './document-changes.js';
import { DocumentEventEntity } from './document-event.entity.js';

/** An event as the feed reads it: with the id of the transaction that wrote it. */
export type FeedRow = DocumentEventEntity & { xid: string };

/**
 * Retention: of the $3 events after id $1, those written before now() - $2 (an ISO 8601 duration). Their
 * push deliveries and attempts go with them (ON DELETE CASCADE, found through idx_outbound_deliveries_event
 * and idx_outbound_delivery_attempts_delivery). `more`: all $3 were old enough, so older ones may follow.
 * Exported for the retention bench, which explains it.
 */
export const PURGE_EVENTS = `WITH head AS (
     SELECT id, created_at < now() - $2::interval AS expired FROM document_events WHERE id > $1::bigint ORDER BY id LIMIT $3),
   gone AS (DELETE FROM document_events e USING head WHERE e.id = head.id AND head.expired RETURNING 1)
   SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT max(id) FROM head)::text AS last,
          COALESCE((SELECT count(*) = $3 AND bool_and(expired) FROM head), false) AS more`;

/**
 * `sources`: every source that has events, by a loose scan of idx_document_events_source_xid_id (one index
 * probe per source): the start of each statement that reads the feed across sources.
 */
const SOURCES = `WITH RECURSIVE sources AS (
     (SELECT source FROM document_events ORDER BY source LIMIT 1)
     UNION ALL
     SELECT (SELECT e.source FROM document_events e WHERE e.source > s.source ORDER BY e.source LIMIT 1) FROM sources s WHERE s.source IS NOT NULL)`;

/**
 * The newest transaction among the events (per source the last entry of idx_document_events_source_xid_id,
 * the sources found by a loose scan of the same index), and the id this cluster gives its next transaction.
 */
const TRANSACTIONS = `${SOURCES},
   newest AS (
     SELECT (SELECT e.xid FROM document_events e WHERE e.source = s.source ORDER BY e.xid DESC LIMIT 1) AS xid
       FROM sources s WHERE s.source IS NOT NULL)
   SELECT (SELECT xid FROM newest ORDER BY xid DESC LIMIT 1)::text AS newest, pg_snapshot_xmax(pg_current_snapshot())::text AS next`;

/** The newest event and the oldest of the $1 ids before it: how fast this database's transaction ids went by. */
const PACE = `WITH last AS (SELECT id, xid, created_at FROM document_events ORDER BY id DESC LIMIT 1)
   SELECT last.xid::text AS "newestXid", last.created_at AS "newestAt", earlier.xid::text AS "earlierXid", earlier.created_at AS "earlierAt"
     FROM last LEFT JOIN LATERAL (
       SELECT xid, created_at FROM document_events WHERE id >= last.id - $1::bigint AND id < last.id ORDER BY id LIMIT 1) earlier ON true`;

/** Every column an event is written with: its id and transaction id are the database's. */
const WRITTEN = [
  'source',
  'documentId',
  'type',
  'status',
  'previousStatus',
  'bankEventId',
  'createdAt',
  'traceParent',
] as const satisfies readonly (keyof NewDocumentEvent)[];

/** The event feed's queries over document_events; its events are written with the changes they announce. */
@Injectable()
export class DocumentEventsRepository {
  /**
   * Event ids come from a sequence, handed out in insert order, not commit order: paging by id alone could
   * skip an event whose transaction commits late. So each event carries its transaction id (column default
   * pg_current_xact_id()), the feed is ordered by (xid, id), and only events of transactions older than
   * every transaction still running are returned: nothing can appear later before the cursor. The ORDER BY
   * names the table's columns: a bare `xid` would be the text of the select list, which sorts 1000 before
   * 999. Clients poll it: a prepared statement.
   */
  private readonly feedPage: PreparedStatement<FeedRow>;
  /** Any number of events in one statement, in the order given (their ids follow it). */
  private readonly appendStatement: PreparedStatement;
  /**
   * The events of every source after a position, in the feed's order across sources: per source as the
   * feed pages it (idx_document_events_source_xid_id, the sources found by a loose scan of it), merged by
   * (xid, id), behind the same horizon, so an event never appears before the position once it is passed.
   */
  private readonly allSources: PreparedStatement<FeedRow>;
  /** The oldest time among each source's first event after a position, committed or behind the horizon alike. */
  private readonly oldestAfterStatement: PreparedStatement<{ oldest: Date | null }>;

  constructor(@InjectRepository(DocumentEventEntity) private readonly events: Repository<DocumentEventEntity>) {
    this.feedPage = new PreparedStatement(
      'document-event-page',
      `SELECT ${selectColumns(events.metadata, { alias: 'e' })}, e.xid::text AS xid
         FROM document_events e
        WHERE e.source = $1
          AND e.xid < pg_snapshot_xmin(pg_current_snapshot())
          AND (e.xid, e.id) > ($2::xid8, $3::bigint)
        ORDER BY e.xid, e.id
        LIMIT $4`,
    );
    this.allSources = new PreparedStatement(
      'document-event-all-sources',
      `${SOURCES}
       SELECT p.* FROM sources s CROSS JOIN LATERAL (
           SELECT ${selectColumns(events.metadata, { alias: 'e' })}, e.xid::text AS xid, e.xid AS position
             FROM document_events e
            WHERE e.source = s.source
              AND e.xid < pg_snapshot_xmin(pg_current_snapshot())
              AND (e.xid, e.id) > ($1::xid8, $2::bigint)
            ORDER BY e.xid, e.id
            LIMIT $3) p
        WHERE s.source IS NOT NULL
        ORDER BY p.position, p.id
        LIMIT $3`,
    );
    this.oldestAfterStatement = new PreparedStatement(
      'document-event-oldest-after',
      `${SOURCES}
       SELECT min(p.created_at) AS oldest FROM sources s CROSS JOIN LATERAL (
           SELECT e.created_at FROM document_events e
            WHERE e.source = s.source AND (e.xid, e.id) > ($1::xid8, $2::bigint)
            ORDER BY e.xid, e.id
            LIMIT 1) p
        WHERE s.source IS NOT NULL`,
    );
    this.appendStatement = new PreparedStatement(
      'document-event-append',
      `INSERT INTO document_events ${unnestColumnsOf<NewDocumentEvent>(events.metadata, WRITTEN)}`,
    );
  }

  /** Events appended to the feed at `tx`'s commit, with the changes they announce. */
  append(tx: Transaction, events: readonly NewDocumentEvent[]): void {
    if (events.length > 0) tx.write(this.appendStatement.with(...arraysOf(events, WRITTEN)));
  }

  /** Up to `limit` events of `source` after the position (`xid`, `id`), oldest first. */
  page(source: string, after: { xid: string; id: string }, limit: number): Promise<FeedRow[]> {
    return this.feedPage.run(this.events.manager, [source, after.xid, after.id, limit]);
  }

  /** Up to `limit` events of every source after the position (`xid`, `id`), in the feed's order. */
  async ofAllSources(after: { xid: string; id: string }, limit: number, tx?: Transaction): Promise<FeedRow[]> {
    const rows = await rowsOf(this.allSources.with(after.xid, after.id, limit), this.events.manager, tx);
    return rows.map(({ position: _position, ...row }: FeedRow & { position?: unknown }) => row);
  }

  /** When the oldest event after the position was written (about: each source's first in the feed's order), or null. */
  async oldestAfter(after: { xid: string; id: string }): Promise<Date | null> {
    const [row] = await this.oldestAfterStatement.run(this.events.manager, [after.xid, after.id]);
    return row?.oldest ?? null;
  }

  /** A document's events, oldest first. */
  ofDocument(documentId: string): Promise<DocumentEventEntity[]> {
    return this.events.find({ where: { documentId }, order: { id: 'ASC' } });
  }

  /** The documents these events are about. */
  documentsOf(eventIds: string[]): Promise<Array<Pick<DocumentEventEntity, 'id' | 'documentId'>>> {
    return this.events.find({ select: { id: true, documentId: true }, where: { id: In(eventIds) } });
  }

  async purge(tx: EntityManager, range: PurgeRange): Promise<PurgeBatch> {
    const [batch] = await tx.query<PurgeBatch[]>(PURGE_EVENTS, [range.after, range.olderThan, range.limit]);
    return batch;
  }

  /** xid8 values as text: the newest event's transaction (null without events), and the cluster's next one. */
  async transactions(): Promise<{ newest: string | null; next: string }> {
    const [row] = await this.events.query<Array<{ newest: string | null; next: string }>>(TRANSACTIONS);
    return row;
  }

  async pace(span: number): Promise<{ newestXid: string; newestAt: Date; earlierXid: string | null; earlierAt: Date | null } | null> {
    const [row] = await this.events.query<Array<{ newestXid: string; newestAt: Date; earlierXid: string | null; earlierAt: Date | null }>>(PACE, [span]);
    return row ?? null;
  }
}

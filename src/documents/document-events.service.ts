import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { decodeCursor, encodeCursor } from '../common/cursor.js';
import { EntityManager } from 'typeorm';
import { PurgeBatch, PurgeRange } from '../database/purge-batch.js';
import { DocumentEventEntity, DocumentEventType } from './document-event.entity.js';
import { DocumentEventsRepository, FeedRow } from './document-events.repository.js';
import type { DocumentStatus } from './lifecycle.js';

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

/** `x` (transaction id) and `e` (event id) cursors joined by a dot, which base64url never contains. */
function feedCursor(row: FeedRow): string {
  return `${encodeCursor('x', row.xid)}.${encodeCursor('e', row.id)}`;
}

function decodeFeedCursor(after: string): { xid: string; id: string } {
  const parts = after.split('.');
  if (parts.length !== 2) throw AppError.validation([{ field: 'after', message: 'is not a cursor this API returned' }]);
  return { xid: decodeCursor('x', parts[0], 'after'), id: decodeCursor('e', parts[1], 'after') };
}

/** The feed of GET /api/v1/events: every event of a source exactly once, in a commit-safe order. */
@Injectable()
export class DocumentEventsService {
  constructor(private readonly events: DocumentEventsRepository) {}

  async list(source: string, after: string | undefined, limit: number): Promise<EventPage> {
    const position = after ? decodeFeedCursor(after) : { xid: '0', id: '0' };
    const rows = await this.events.page(source, position, limit + 1);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return { data: page.map(DocumentEventsService.view), nextCursor: last ? feedCursor(last) : (after ?? null), hasMore: rows.length > limit };
  }

  /** Every event of a document, oldest first (administrators' view; the caller decides who may see it). */
  async ofDocument(documentId: string): Promise<DocumentEventView[]> {
    return (await this.events.ofDocument(documentId)).map(DocumentEventsService.view);
  }

  /** Which document each of these events is about. */
  async documentsOf(eventIds: string[]): Promise<Map<string, string>> {
    if (eventIds.length === 0) return new Map();
    return new Map((await this.events.documentsOf(eventIds)).map((row) => [row.id, row.documentId]));
  }

  /** Retention: a batch of events past RETENTION_EVENTS, with their push deliveries and attempts. */
  purge(tx: EntityManager, range: PurgeRange): Promise<PurgeBatch> {
    return this.events.purge(tx, range);
  }

  /** An event exactly as the feed lists it; push deliveries send the same view. */
  static view(row: Pick<DocumentEventEntity, 'id' | 'type' | 'documentId' | 'status' | 'previousStatus' | 'createdAt'>): DocumentEventView {
    return {
      id: row.id,
      type: row.type,
      documentId: row.documentId,
      status: row.status,
      previousStatus: row.previousStatus,
      createdAt: row.createdAt.toISOString(),
    };
  }
}

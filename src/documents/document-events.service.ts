import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { decodeCursor, encodeCursor } from '../common/cursor';
import { TransactionContext } from '../database/transaction-context';
import { DocumentEventEntity, DocumentEventType } from './document-event.entity';
import type { DocumentStatus } from './lifecycle';

/** Namespace of the per-source feed lock (pg_advisory_xact_lock(namespace, hashtext(source))). */
const FEED_LOCK_NAMESPACE = 7_340_215;

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

@Injectable()
export class DocumentEventsService {
  constructor(private readonly tx: TransactionContext) {}

  /**
   * Appends an event inside the caller's transaction. Event ids come from a sequence, which hands
   * them out in insert order, not commit order: a reader could see id 11 before id 10 commits and
   * page past it for good. Taking the source's feed lock (held to commit) before the insert makes
   * ids of one source commit in order, so a client paging by id sees every event exactly once.
   */
  async append(
    manager: EntityManager,
    event: { source: string; documentId: string; type: DocumentEventType; status: DocumentStatus; previousStatus: DocumentStatus | null },
  ): Promise<void> {
    await manager.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [FEED_LOCK_NAMESPACE, event.source]);
    await manager.insert(DocumentEventEntity, event);
  }

  async list(source: string, after: string | undefined, limit: number): Promise<EventPage> {
    const afterId = after ? decodeCursor('e', after, 'after') : '0';
    const rows = await this.tx.manager
      .createQueryBuilder(DocumentEventEntity, 'e')
      .where('e.source = :source AND e.id > :afterId', { source, afterId })
      .orderBy('e.id', 'ASC')
      .limit(limit + 1)
      .getMany();
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
      nextCursor: last ? encodeCursor('e', last.id) : (after ?? null),
      hasMore: rows.length > limit,
    };
  }
}

import { Injectable } from '@nestjs/common';
import type { Transaction } from '../database/transaction.js';
import type { DocumentRecord } from './document-changes.js';
import { DocumentEventsRepository } from './document-events.repository.js';
import { DocumentEventsService, DocumentEventView } from './document-events.service.js';
import { documentAfter } from './document-history.js';
import { DocumentsRepository } from './documents.repository.js';
import { DocumentResponseDto, toDocumentResponse } from './dto/document-response.dto.js';

/** A position in the feed's order across sources: the writing transaction's id and the event's. */
export interface FeedPosition {
  xid: string;
  id: string;
}

/** A feed event as the archive records it: the event as the feed shows it, and its document as the event left it. */
export interface HistoricRecord {
  position: FeedPosition;
  source: string;
  event: DocumentEventView;
  document: DocumentResponseDto;
  bankEventId: string | null;
}

export const FEED_START: FeedPosition = { xid: '0', id: '0' };

const withoutSeq = ({ seq: _seq, ...document }: DocumentRecord & { seq?: string }): DocumentRecord => document;

/** The documents' history as the archive (src/archive) seals and verifies it: read-only. */
@Injectable()
export class DocumentHistoryService {
  constructor(
    private readonly events: DocumentEventsRepository,
    private readonly documents: DocumentsRepository,
  ) {}

  /** Up to `limit` feed events of every source after `after`, in the feed's order, each with its document as it left it; in `tx` when given. */
  async after(after: FeedPosition, limit: number, tx?: Transaction): Promise<HistoricRecord[]> {
    const rows = await this.events.ofAllSources(after, limit, tx);
    const documents = new Map((await this.documents.byIds([...new Set(rows.map((row) => row.documentId))], tx)).map((d) => [d.id, withoutSeq(d)]));
    return rows.map((row) => {
      const current = documents.get(row.documentId);
      // A feed event's document is never deleted (fk_document_events_document cascades the other way).
      if (!current) throw new Error(`Feed event ${row.id} has no document`);
      return {
        position: { xid: row.xid, id: row.id },
        source: row.source,
        event: DocumentEventsService.view(row),
        document: toDocumentResponse(documentAfter(row, current)),
        bankEventId: row.bankEventId,
      };
    });
  }

  /** A document's feed events, oldest first, each with the document as it left it (its own source's only). */
  async ofDocument(source: string, documentId: string): Promise<Array<Omit<HistoricRecord, 'position'> & { eventId: string }>> {
    const [document] = await this.documents.byIds([documentId]);
    if (!document || document.source !== source) return [];
    const current = withoutSeq(document);
    return (await this.events.ofDocument(documentId)).map((row) => ({
      eventId: row.id,
      source: row.source,
      event: DocumentEventsService.view(row),
      document: toDocumentResponse(documentAfter(row, current)),
      bankEventId: row.bankEventId,
    }));
  }

  /** When the oldest feed event after `after` was written, or null when there is none. */
  oldestAfter(after: FeedPosition): Promise<Date | null> {
    return this.events.oldestAfter(after);
  }

  /** Every source's documents as the API shows them now, `limit` after insertion position `afterSeq`, with the position of the last. */
  async current(afterSeq: string, limit: number): Promise<{ documents: DocumentResponseDto[]; last: string | null }> {
    const rows = await this.documents.inOrder(afterSeq, limit);
    return { documents: rows.map((row) => toDocumentResponse(withoutSeq(row))), last: rows.at(-1)?.seq ?? null };
  }
}

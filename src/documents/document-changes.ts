import { randomUUID } from 'node:crypto';
import type { DocumentEventEntity } from './document-event.entity.js';
import type { DocumentEntity } from './document.entity.js';
import type { DocumentStatus } from './lifecycle.js';

/** A document as the gateway makes and changes it: every column but `seq`, the insertion order PostgreSQL gives. */
export type DocumentRecord = Omit<DocumentEntity, 'seq'>;

/** A feed event as it is written: its id and transaction id are the database's. */
export type NewDocumentEvent = Omit<DocumentEventEntity, 'id' | 'xid' | 'document'>;

/** What a create takes from the request: every column but those `created` makes. */
export type DocumentFields = Omit<DocumentRecord, 'id' | 'status' | 'paymentStatus' | 'paymentLastEventId' | 'paymentUpdatedAt' | 'createdAt' | 'updatedAt'>;

/** What a status change reads and writes of a document: a bank event's change needs no more of it. */
export type DocumentState = Pick<DocumentRecord, 'id' | 'source' | 'status' | 'paymentStatus' | 'paymentLastEventId' | 'paymentUpdatedAt' | 'updatedAt'>;

/** A status change: the status after (the same when only the payment is recorded), and the bank's payment when one is applied. */
export interface StatusChange {
  status: DocumentStatus;
  payment?: { status: string; eventId: string };
  /** The traceparent of the request that makes the change, for its event. */
  traceParent: string | null;
}

/** A new document, complete before it is written (the application makes its id and times), with its `document.created` event. */
export function created(fields: DocumentFields, at: Date): { document: DocumentRecord; event: NewDocumentEvent } {
  const document: DocumentRecord = {
    ...fields,
    id: randomUUID(),
    status: 'PENDING_PAYMENT',
    paymentStatus: null,
    paymentLastEventId: null,
    paymentUpdatedAt: null,
    createdAt: at,
    updatedAt: at,
  };
  return { document, event: eventOf(document, 'document.created', null, null, fields.traceParent, at) };
}

/**
 * The document after `change`, and its `document.status_changed` event when its status moves: the one
 * place where a status changes, so a status never moves without its event. A payment applied is recorded
 * whatever the status does, and marks the document established for its reference (reference-claims.ts).
 */
export function changed<T extends DocumentState>(document: T, change: StatusChange, at: Date): { document: T; event: NewDocumentEvent | null } {
  const next: T = {
    ...document,
    status: change.status,
    ...(change.payment ? { paymentStatus: change.payment.status, paymentLastEventId: change.payment.eventId, paymentUpdatedAt: at } : {}),
    updatedAt: at,
  };
  const moved = change.status !== document.status;
  return {
    document: next,
    event: moved ? eventOf(next, 'document.status_changed', document.status, change.payment?.eventId ?? null, change.traceParent, at) : null,
  };
}

function eventOf(
  document: DocumentState,
  type: NewDocumentEvent['type'],
  previousStatus: DocumentStatus | null,
  bankEventId: string | null,
  traceParent: string | null,
  at: Date,
): NewDocumentEvent {
  return { source: document.source, documentId: document.id, type, status: document.status, previousStatus, bankEventId, createdAt: at, traceParent };
}

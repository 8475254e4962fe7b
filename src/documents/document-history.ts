import canonicalize from 'canonicalize';
import type { DocumentRecord } from './document-changes.js';
import type { DocumentResponseDto } from './dto/document-response.dto.js';
import type { DocumentEventEntity } from './document-event.entity.js';
import { DocumentStatus, LIFECYCLE, PROVIDER_STATUSES, ProviderStatus } from './lifecycle.js';

export type HistoricEvent = Pick<DocumentEventEntity, 'type' | 'status' | 'bankEventId' | 'createdAt'>;

/**
 * The bank's payment status that moves a document into `status`, read off the lifecycle's table: each
 * status a bank event leads to has exactly one, so a change's event and its bank eventId give the payment.
 */
const PAYMENT_STATUS_INTO = new Map<DocumentStatus, ProviderStatus>(
  LIFECYCLE.filter((row) => row.from !== row.to && (PROVIDER_STATUSES as readonly string[]).includes(row.on)).map((row) => [row.to, row.on as ProviderStatus]),
);

/**
 * The document as `event` left it, from the document as it is now (`current`), for the archive. What a
 * document's events change is its status, its payment and updatedAt (document-changes.ts makes each with
 * the event's time), and everything else is as it was created. A bank event's change records that
 * event's payment; a cancel keeps the payment as it was, which stays so (CANCELLED is final); the
 * creation has none yet. An event written before events named their bank event keeps the payment the
 * document shows now.
 */
export function documentAfter(event: HistoricEvent, current: DocumentRecord): DocumentRecord {
  const at = event.createdAt;
  if (event.type === 'document.created') {
    return { ...current, status: event.status, paymentStatus: null, paymentLastEventId: null, paymentUpdatedAt: null, updatedAt: at };
  }
  const paymentStatus = PAYMENT_STATUS_INTO.get(event.status);
  if (event.bankEventId !== null && paymentStatus !== undefined) {
    return { ...current, status: event.status, paymentStatus, paymentLastEventId: event.bankEventId, paymentUpdatedAt: at, updatedAt: at };
  }
  return { ...current, status: event.status, updatedAt: at };
}

/** A document without what its events set (status, payment, updatedAt): what stays as it was created, entry after entry. */
export function unchangingPart(document: DocumentResponseDto): Omit<DocumentResponseDto, 'status' | 'payment' | 'updatedAt'> {
  const { status: _status, payment: _payment, updatedAt: _updatedAt, ...unchanging } = document;
  return unchanging;
}

/**
 * Whether a document as the API shows it now (`current`) differs from the document as its latest event
 * left it (`archived`) only by payment progress that moves no status (PENDING, PROCESSING: bank events
 * the feed has no event for), made with that event or after it (a new document's waiting bank events are
 * applied at its creation's time). Anything else means the row was changed outside
 * the gateway's rules.
 */
export function onlyPaymentProgress(current: DocumentResponseDto, archived: DocumentResponseDto): boolean {
  if (current.status !== archived.status || canonicalize(unchangingPart(current)) !== canonicalize(unchangingPart(archived))) return false;
  const { payment, updatedAt } = current;
  const progress = LIFECYCLE.some((row) => row.from === current.status && row.to === current.status && row.on === payment.status);
  return progress && payment.lastEventId !== null && payment.updatedAt === updatedAt && Date.parse(updatedAt) >= Date.parse(archived.updatedAt);
}

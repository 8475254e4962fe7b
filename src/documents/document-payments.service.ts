import { Injectable } from '@nestjs/common';
import { AdvisoryLock, statement, Transaction } from '../database/database';
import { CHANGE_DOCUMENT } from './document-sql';
import { DocumentEntity } from './document.entity';
import { LifecycleOutcome, transition } from './lifecycle';

const PROVIDER_REFERENCE_LOCK_NAMESPACE = 7_340_217;

/**
 * Serialises everything that concerns one providerReference (a webhook event for it, a document
 * created with it), so an event can never be stored as unmatched while its document is being
 * created. Taken in a statement of its own (or with the idempotency claim): what follows must be
 * read with a snapshot taken after the lock was granted.
 */
export function providerReferenceLock(providerReference: string): AdvisoryLock {
  return { namespace: PROVIDER_REFERENCE_LOCK_NAMESPACE, key: providerReference };
}

/**
 * Only what a bank event's decision needs: every column more is parsed, and its field description
 * handled, by pg on each delivery (21 columns cost the bank webhook about 20 µs of Node CPU).
 */
const FIND_BY_PROVIDER_REFERENCE = statement('document-by-provider-reference', `SELECT id, status FROM documents WHERE provider_reference = $1 FOR UPDATE`);

/** A document locked for a bank event's decision. */
export type LockedDocument = Pick<DocumentEntity, 'id' | 'status'>;

export interface ProviderStatusEvent {
  eventId: string;
  status: string;
}

/** Applies the bank's payment statuses to documents, through the one lifecycle function. */
@Injectable()
export class DocumentPaymentsService {
  lockProviderReference(tx: Transaction, providerReference: string): Promise<void> {
    return tx.advisoryLock(providerReferenceLock(providerReference));
  }

  async findForUpdate(tx: Transaction, providerReference: string): Promise<LockedDocument | null> {
    const [document] = await tx.query<LockedDocument>(FIND_BY_PROVIDER_REFERENCE, [providerReference]);
    return document ?? null;
  }

  /** What `event` would do to `document`; pure, so the caller can decide before writing anything. */
  assess(document: Pick<DocumentEntity, 'status'>, event: ProviderStatusEvent): LifecycleOutcome {
    return transition(document.status, { kind: 'provider', status: event.status });
  }

  /** Applies an assessed event to a locked document: payment details, status and the feed event. */
  async apply(tx: Transaction, document: DocumentEntity, event: ProviderStatusEvent, outcome: LifecycleOutcome): Promise<DocumentEntity> {
    if (outcome.result === 'refused') return document;
    const status = outcome.result === 'changed' ? outcome.to : document.status;
    const [changed] = await tx.query<DocumentEntity>(CHANGE_DOCUMENT, [document.id, status, event.status.toUpperCase(), event.eventId, document.status]);
    return changed;
  }
}

import { Injectable } from '@nestjs/common';
import { AdvisoryLock, Transaction } from '../database/database';
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

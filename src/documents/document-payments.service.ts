import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { DocumentEventsService } from './document-events.service';
import { DocumentEntity } from './document.entity';
import { LifecycleOutcome, transition } from './lifecycle';

const PROVIDER_REFERENCE_LOCK_NAMESPACE = 7_340_217;

export interface ProviderStatusEvent {
  eventId: string;
  status: string;
}

/** Applies the bank's payment statuses to documents, through the one lifecycle function. */
@Injectable()
export class DocumentPaymentsService {
  constructor(private readonly events: DocumentEventsService) {}

  /**
   * Serialises everything that concerns one providerReference (a webhook event for it, a document
   * created with it), so an event can never be stored as unmatched while its document is being created.
   */
  async lockProviderReference(manager: EntityManager, providerReference: string): Promise<void> {
    await manager.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [PROVIDER_REFERENCE_LOCK_NAMESPACE, providerReference]);
  }

  findForUpdate(manager: EntityManager, providerReference: string): Promise<DocumentEntity | null> {
    return manager
      .createQueryBuilder(DocumentEntity, 'd')
      .where('d.provider_reference = :providerReference', { providerReference })
      .setLock('pessimistic_write')
      .getOne();
  }

  /** What `event` would do to `document`; pure, so the caller can decide before writing anything. */
  assess(document: DocumentEntity, event: ProviderStatusEvent): LifecycleOutcome {
    return transition(document.status, { kind: 'provider', status: event.status });
  }

  /** Applies an assessed event to a locked document: payment details, status and the feed event. */
  async apply(manager: EntityManager, document: DocumentEntity, event: ProviderStatusEvent, outcome: LifecycleOutcome): Promise<void> {
    if (outcome.result === 'refused') return;
    const previous = document.status;
    document.paymentStatus = event.status.toUpperCase();
    document.paymentLastEventId = event.eventId;
    document.paymentUpdatedAt = new Date();
    if (outcome.result === 'changed') document.status = outcome.to;
    await manager.save(document);
    if (outcome.result === 'changed') {
      await this.events.append(manager, {
        source: document.source,
        documentId: document.id,
        type: 'document.status_changed',
        status: outcome.to,
        previousStatus: previous,
      });
    }
  }
}

import { Injectable, OnModuleInit } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { TransactionContext } from '../database/transaction-context';
import { DocumentPaymentsService } from '../documents/document-payments.service';
import { DocumentEntity } from '../documents/document.entity';
import { DocumentsService } from '../documents/documents.service';
import { WebhookEventEntity, WebhookOutcome } from './webhook-event.entity';
import { VerifiedDelivery } from './webhook-signature.pipe';

export const PAYMENT_STATUS_EVENT = 'PAYMENT_STATUS';

export interface WebhookEventView {
  eventId: string;
  eventType: string;
  status: string;
  providerReference: string;
  outcome: WebhookOutcome;
  documentId: string | null;
  receivedAt: string;
}

@Injectable()
export class WebhookEventsService implements OnModuleInit {
  constructor(
    private readonly tx: TransactionContext,
    private readonly payments: DocumentPaymentsService,
    private readonly documents: DocumentsService,
  ) {}

  onModuleInit(): void {
    this.documents.onCreated((manager, document) => this.applyUnmatched(manager, document));
  }

  /**
   * Stores and applies one verified delivery in a single transaction; the caller answers 200 only
   * after it commits. Decided under the providerReference lock, with the event's row inserted before
   * the document is touched: if the eventId is already there (even from a concurrent delivery, which
   * the unique index makes wait for us), this delivery is a duplicate and changes nothing.
   */
  receive({ payload, rawBody, signedAt }: VerifiedDelivery): Promise<WebhookOutcome> {
    return this.tx.run(async (manager) => {
      await this.payments.lockProviderReference(manager, payload.providerReference);
      const document = payload.eventType === PAYMENT_STATUS_EVENT ? await this.payments.findForUpdate(manager, payload.providerReference) : null;
      const assessment = document ? this.payments.assess(document, payload) : null;
      const outcome: WebhookOutcome =
        payload.eventType !== PAYMENT_STATUS_EVENT ? 'ignored' : !document ? 'unmatched' : assessment!.result === 'refused' ? 'ignored' : 'applied';

      const row = { ...payload, rawBody, signedAt, documentId: document?.id ?? null };
      const inserted = await manager
        .createQueryBuilder()
        .insert()
        .into(WebhookEventEntity)
        .values({ ...row, outcome })
        .orIgnore()
        .returning(['id'])
        .execute();
      if ((inserted.raw as unknown[]).length === 0) {
        await manager.insert(WebhookEventEntity, { ...row, outcome: 'duplicate' });
        return 'duplicate';
      }
      if (document && assessment) await this.payments.apply(manager, document, payload, assessment);
      return outcome;
    });
  }

  /** Events that arrived before their document: applied, oldest first, as the document is created. */
  private async applyUnmatched(manager: EntityManager, document: DocumentEntity): Promise<void> {
    if (!document.providerReference) return;
    const pending = await manager.find(WebhookEventEntity, {
      where: { providerReference: document.providerReference, outcome: 'unmatched' },
      order: { id: 'ASC' },
    });
    for (const event of pending) {
      const assessment = this.payments.assess(document, event);
      await this.payments.apply(manager, document, event, assessment);
      await manager.update(WebhookEventEntity, { id: event.id }, {
        outcome: assessment.result === 'refused' ? 'ignored' : 'applied',
        documentId: document.id,
        processedAt: new Date(),
      });
    }
  }

  async list(filter: { outcome?: WebhookOutcome; limit: number }): Promise<WebhookEventView[]> {
    const rows = await this.tx.manager.find(WebhookEventEntity, {
      where: filter.outcome ? { outcome: filter.outcome } : {},
      order: { id: 'DESC' },
      take: filter.limit,
    });
    return rows.map((e) => ({
      eventId: e.eventId,
      eventType: e.eventType,
      status: e.status,
      providerReference: e.providerReference,
      outcome: e.outcome,
      documentId: e.documentId,
      receivedAt: e.receivedAt.toISOString(),
    }));
  }
}

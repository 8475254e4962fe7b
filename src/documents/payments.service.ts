import { Injectable } from '@nestjs/common';
import { Transaction } from '../database/database';
import { BankEventOutcome } from './bank-event.entity';
import { DocumentEntity } from './document.entity';
import { DocumentsRepository } from './documents.repository';
import { FeedSignal } from './feed-signal';
import { transition } from './lifecycle';
import { BankEventRow, PaymentsRepository, ReceivedDelivery } from './payments.repository';

export interface BankEventView extends Omit<BankEventRow, 'receivedAt'> {
  receivedAt: string;
}

/** The bank's payment status events: stored, applied to documents through the lifecycle, listed. */
@Injectable()
export class PaymentsService {
  constructor(
    private readonly payments: PaymentsRepository,
    private readonly documents: DocumentsRepository,
    private readonly feed: FeedSignal,
  ) {}

  /** Stores and applies one verified delivery; the caller answers 200 only after this resolves (committed). */
  async receive(delivery: ReceivedDelivery): Promise<BankEventOutcome> {
    const { outcome, statusChanged } = await this.payments.receive(delivery);
    if (statusChanged) this.feed.appended();
    return outcome ?? 'duplicate';
  }

  /**
   * Applies, oldest first, the events that arrived before `document` (a new one with a providerReference,
   * whose lock `tx` holds), and marks them applied or ignored.
   */
  async applyWaiting(tx: Transaction, document: DocumentEntity): Promise<DocumentEntity> {
    if (!document.providerReference) return document;
    for (const event of await this.payments.waiting(tx, document.providerReference)) {
      const outcome = transition(document.status, { kind: 'provider', status: event.status });
      if (outcome.result !== 'refused') {
        const status = outcome.result === 'changed' ? outcome.to : document.status;
        document = await this.documents.change(tx, { id: document.id, status, previous: document.status, paymentStatus: event.status.toUpperCase(), eventId: event.eventId });
      }
      await this.payments.settle(tx, event.id, outcome.result === 'refused' ? 'ignored' : 'applied', document.id);
    }
    return document;
  }

  async list(filter: { outcome?: BankEventOutcome; limit: number }): Promise<BankEventView[]> {
    const rows = await this.payments.page(filter.outcome, filter.limit);
    return rows.map((e) => ({ ...e, receivedAt: e.receivedAt.toISOString() }));
  }
}

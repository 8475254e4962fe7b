import { Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { BankEventView, PaymentsService } from '../documents/payments.service';
import { AuditLogService } from './audit-log.service';

/** Bank events as administrators handle them: an ambiguous one applied to the document it was meant for, audited. */
@Injectable()
export class AdminWebhookEventsService {
  constructor(
    private readonly db: Database,
    private readonly payments: PaymentsService,
    private readonly audit: AuditLogService,
  ) {}

  apply(eventId: string, documentId: string, remoteAddress: string): Promise<BankEventView> {
    return this.db.transaction(async (tx) => {
      const { event, document } = await this.payments.applyTo(tx, eventId, documentId);
      await this.audit.record(tx, { action: 'webhook_event.applied', keyId: null, source: document.source, remoteAddress });
      return event;
    });
  }
}

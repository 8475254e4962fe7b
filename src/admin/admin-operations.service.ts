import { Injectable } from '@nestjs/common';
import { DocumentEventsService, DocumentEventView } from '../documents/document-events.service.js';
import { DocumentsService, ReferenceClaimsView } from '../documents/documents.service.js';
import { DocumentResponseDto } from '../documents/dto/document-response.dto.js';
import { BankEventView, PaymentsService } from '../documents/payments.service.js';
import { AdminDeliveryDto } from '../outbound-webhooks/dto/delivery.dto.js';
import { AdminWebhookEndpointDto } from '../outbound-webhooks/dto/webhook-endpoint.dto.js';
import { OutboundDeliveriesService } from '../outbound-webhooks/outbound-deliveries.service.js';
import { WebhookEndpointsService } from '../outbound-webhooks/webhook-endpoints.service.js';
import { AuditContext } from './admin-actor.js';
import { AuditLogService } from './audit-log.service.js';
import { Transactions } from '../database/transaction.js';

/** At most this many of a document's deliveries are shown with it; the deliveries list pages through the rest. */
const DOCUMENT_DELIVERIES = 50;

export interface DocumentDetail extends ReferenceClaimsView {
  document: DocumentResponseDto;
  events: DocumentEventView[];
  deliveries: AdminDeliveryDto[];
  deliveriesNextCursor: string | null;
}

/**
 * What operators do to a client's traffic (switch its push endpoint, retry a delivery, apply an ambiguous
 * bank event) with the audit entry in the change's own transaction, and the read-only views across modules.
 */
@Injectable()
export class AdminOperationsService {
  constructor(
    private readonly transactions: Transactions,
    private readonly documents: DocumentsService,
    private readonly events: DocumentEventsService,
    private readonly payments: PaymentsService,
    private readonly endpoints: WebhookEndpointsService,
    private readonly deliveries: OutboundDeliveriesService,
    private readonly audit: AuditLogService,
  ) {}

  setEndpointEnabled(context: AuditContext, id: string, enabled: boolean): Promise<AdminWebhookEndpointDto> {
    return this.transactions.managed(async (tx) => {
      const endpoint = await this.endpoints.setEnabledByAdmin(tx, id, enabled);
      await this.audit.record(tx, context, {
        action: enabled ? 'webhook_endpoint.enabled' : 'webhook_endpoint.disabled',
        target: { type: 'webhook_endpoint', id: endpoint.id },
        source: endpoint.source,
      });
      return endpoint;
    });
  }

  retryDelivery(context: AuditContext, id: string): Promise<AdminDeliveryDto> {
    return this.transactions.managed(async (tx) => {
      const delivery = await this.deliveries.retryForAdmin(tx, id);
      await this.audit.record(tx, context, {
        action: 'outbound_delivery.retried',
        target: { type: 'outbound_delivery', id: delivery.id },
        source: delivery.source,
      });
      return delivery;
    });
  }

  applyBankEvent(context: AuditContext, eventId: string, documentId: string): Promise<BankEventView> {
    // The audit entry is written through TypeORM, so the transaction is one TypeORM knows of.
    return this.transactions.managed(async (manager, tx) => {
      const { event, document } = await this.payments.applyTo(tx, eventId, documentId);
      await this.audit.record(manager, context, { action: 'webhook_event.applied', target: { type: 'webhook_event', id: eventId }, source: document.source });
      return event;
    });
  }

  /**
   * A document of any source with its feed events, the push deliveries of those events, and the other
   * documents that claim its providerReference with the one the bank's events for it go to.
   */
  async document(id: string): Promise<DocumentDetail> {
    const document = await this.documents.getForAdmin(id);
    const [events, deliveries, claims] = await Promise.all([
      this.events.ofDocument(id),
      this.deliveries.pageForAdmin({ documentId: id }, DOCUMENT_DELIVERIES),
      this.documents.referenceClaimsForAdmin(document),
    ]);
    return { document, events, deliveries: deliveries.data, deliveriesNextCursor: deliveries.nextCursor, ...claims };
  }
}

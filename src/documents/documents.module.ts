import { TypeOrmModule } from '@nestjs/typeorm';
import { BankEventEntity } from './bank-event.entity.js';
import { DocumentEventEntity } from './document-event.entity.js';
import { DocumentEntity } from './document.entity.js';
import { Module } from '@nestjs/common';
import { MetricsModule } from '../metrics/metrics.module.js';
import { DocumentEventsRepository } from './document-events.repository.js';
import { DocumentEventsService } from './document-events.service.js';
import { DocumentHistoryService } from './document-history.service.js';
import { DocumentsController } from './documents.controller.js';
import { DocumentsRepository } from './documents.repository.js';
import { DocumentsService } from './documents.service.js';
import { EventsController } from './events.controller.js';
import { FeedSignal } from './feed-signal.js';
import { FeedTransactionCheck } from './feed-transaction-check.js';
import { PaymentsRepository } from './payments.repository.js';
import { PaymentsService } from './payments.service.js';

/**
 * Documents, their feed of events and their payments: the bank's payment status events are stored and
 * applied here (the webhooks module verifies and parses the bank's deliveries and hands them over).
 */
@Module({
  imports: [TypeOrmModule.forFeature([DocumentEntity, DocumentEventEntity, BankEventEntity]), MetricsModule],
  controllers: [DocumentsController, EventsController],
  providers: [
    DocumentsRepository,
    DocumentsService,
    DocumentEventsRepository,
    DocumentEventsService,
    DocumentHistoryService,
    PaymentsRepository,
    PaymentsService,
    FeedSignal,
    FeedTransactionCheck,
  ],
  exports: [DocumentsService, DocumentEventsService, DocumentHistoryService, PaymentsService, FeedSignal],
})
export class DocumentsModule {}

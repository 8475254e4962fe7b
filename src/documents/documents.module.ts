import { TypeOrmModule } from '@nestjs/typeorm';
import { BankEventEntity } from './bank-event.entity';
import { DocumentEventEntity } from './document-event.entity';
import { DocumentEntity } from './document.entity';
import { Module } from '@nestjs/common';
import { MetricsModule } from '../metrics/metrics.module';
import { DocumentEventsRepository } from './document-events.repository';
import { DocumentEventsService } from './document-events.service';
import { DocumentsController } from './documents.controller';
import { DocumentsRepository } from './documents.repository';
import { DocumentsService } from './documents.service';
import { EventsController } from './events.controller';
import { FeedSignal } from './feed-signal';
import { FeedTransactionCheck } from './feed-transaction-check';
import { PaymentsRepository } from './payments.repository';
import { PaymentsService } from './payments.service';

/**
 * Documents, their feed of events and their payments: the bank's payment status events are stored and
 * applied here (the webhooks module verifies and parses the bank's deliveries and hands them over).
 */
@Module({
  imports: [TypeOrmModule.forFeature([DocumentEntity, DocumentEventEntity, BankEventEntity]), MetricsModule],
  controllers: [DocumentsController, EventsController],
  providers: [DocumentsRepository, DocumentsService, DocumentEventsRepository, DocumentEventsService, PaymentsRepository, PaymentsService, FeedSignal, FeedTransactionCheck],
  exports: [DocumentsService, DocumentEventsService, PaymentsService, FeedSignal],
})
export class DocumentsModule {}

import { Module } from '@nestjs/common';
import { DocumentEventsService } from './document-events.service';
import { DocumentPaymentsService } from './document-payments.service';
import { DocumentsController } from './documents.controller';
import { DocumentsService } from './documents.service';
import { EventsController } from './events.controller';

@Module({
  controllers: [DocumentsController, EventsController],
  providers: [DocumentsService, DocumentEventsService, DocumentPaymentsService],
  exports: [DocumentsService, DocumentEventsService, DocumentPaymentsService],
})
export class DocumentsModule {}

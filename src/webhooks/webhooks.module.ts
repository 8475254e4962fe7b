import { Module } from '@nestjs/common';
import { DocumentsModule } from '../documents/documents.module';
import { WebhookEventsService } from './webhook-events.service';
import { WebhookSignaturePipe } from './webhook-signature.pipe';
import { WebhooksController } from './webhooks.controller';

@Module({
  imports: [DocumentsModule],
  controllers: [WebhooksController],
  providers: [WebhookEventsService, WebhookSignaturePipe],
  exports: [WebhookEventsService],
})
export class WebhooksModule {}

import { Module } from '@nestjs/common';
import { DocumentsModule } from '../documents/documents.module.js';
import { WebhookSignaturePipe } from './webhook-signature.pipe.js';
import { WebhooksController } from './webhooks.controller.js';

/** The bank's signed webhook: verified (WebhookSignaturePipe) and parsed here, stored and applied by documents. */
@Module({
  imports: [DocumentsModule],
  controllers: [WebhooksController],
  providers: [WebhookSignaturePipe],
})
export class WebhooksModule {}

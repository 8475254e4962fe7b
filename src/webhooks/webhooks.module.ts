import { Module } from '@nestjs/common';
import { DocumentsModule } from '../documents/documents.module';
import { WebhookSignaturePipe } from './webhook-signature.pipe';
import { WebhooksController } from './webhooks.controller';

/** The bank's signed webhook: verified (WebhookSignaturePipe) and parsed here, stored and applied by documents. */
@Module({
  imports: [DocumentsModule],
  controllers: [WebhooksController],
  providers: [WebhookSignaturePipe],
})
export class WebhooksModule {}

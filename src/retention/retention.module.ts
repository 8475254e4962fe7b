import { Module } from '@nestjs/common';
import { AdminModule } from '../admin/admin.module';
import { DocumentsModule } from '../documents/documents.module';
import { MetricsModule } from '../metrics/metrics.module';
import { OutboundWebhooksModule } from '../outbound-webhooks/outbound-webhooks.module';
import { RetentionRepository } from './retention.repository';
import { RetentionService } from './retention.service';

/** Retention (docs/operations.md, "Retention"): the periodic purge of what only grows; each module keeps its own statement. */
@Module({
  imports: [MetricsModule, DocumentsModule, OutboundWebhooksModule, AdminModule],
  providers: [RetentionRepository, RetentionService],
})
export class RetentionModule {}

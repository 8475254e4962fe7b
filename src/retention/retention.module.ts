import { Module } from '@nestjs/common';
import { AdminModule } from '../admin/admin.module.js';
import { ArchiveModule } from '../archive/archive.module.js';
import { DocumentsModule } from '../documents/documents.module.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { OutboundWebhooksModule } from '../outbound-webhooks/outbound-webhooks.module.js';
import { RetentionRepository } from './retention.repository.js';
import { RetentionService } from './retention.service.js';

/** Retention (docs/operations.md, "Retention"): the periodic purge of what only grows; each module keeps its own statement. */
@Module({
  imports: [MetricsModule, DocumentsModule, OutboundWebhooksModule, AdminModule, ArchiveModule],
  providers: [RetentionRepository, RetentionService],
})
export class RetentionModule {}

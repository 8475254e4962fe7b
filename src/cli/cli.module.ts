import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AdminEntity, AdminOidcLoginEntity, AdminSessionEntity, AdminTokenEntity } from '../admin/admin.entity.js';
import { AdminApiKeysService } from '../admin/admin-api-keys.service.js';
import { AdminOperationsService } from '../admin/admin-operations.service.js';
import { AdminsRepository } from '../admin/admins.repository.js';
import { AdminsService } from '../admin/admins.service.js';
import { AuditLogEntity } from '../admin/audit-log.entity.js';
import { AuditLogRepository } from '../admin/audit-log.repository.js';
import { AuditLogService } from '../admin/audit-log.service.js';
import { ArchiveCheckpointEntity } from '../archive/archive-checkpoint.entity.js';
import { ArchiveEntryEntity } from '../archive/archive-entry.entity.js';
import { ArchiveNodeEntity } from '../archive/archive-node.entity.js';
import { ArchiveVerificationEntity } from '../archive/archive-verification.entity.js';
import { ArchiveVerifier } from '../archive/archive-verifier.js';
import { ArchiveRepository } from '../archive/archive.repository.js';
import { ApiKeyEntity } from '../auth/api-key.entity.js';
import { ApiKeysRepository } from '../auth/api-keys.repository.js';
import { ApiKeysService } from '../auth/api-keys.service.js';
import { KeyUsageRecorder } from '../auth/key-usage.recorder.js';
import { AppConfig } from '../config/app-config.js';
import { ConfigModule } from '../config/config.module.js';
import { DatabaseModule } from '../database/database.module.js';
import { BankEventEntity } from '../documents/bank-event.entity.js';
import { DocumentEventEntity } from '../documents/document-event.entity.js';
import { DocumentEntity } from '../documents/document.entity.js';
import { DocumentEventsRepository } from '../documents/document-events.repository.js';
import { DocumentEventsService } from '../documents/document-events.service.js';
import { DocumentHistoryService } from '../documents/document-history.service.js';
import { DocumentsRepository } from '../documents/documents.repository.js';
import { DocumentsService } from '../documents/documents.service.js';
import { FeedSignal } from '../documents/feed-signal.js';
import { PaymentsRepository } from '../documents/payments.repository.js';
import { PaymentsService } from '../documents/payments.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { DeliveryClaimsRepository } from '../outbound-webhooks/delivery-claims.repository.js';
import { DeliveryWorker } from '../outbound-webhooks/delivery-worker.js';
import { OutboundDeliveriesRepository } from '../outbound-webhooks/outbound-deliveries.repository.js';
import { OutboundDeliveriesService } from '../outbound-webhooks/outbound-deliveries.service.js';
import { OutboundDeliveryAttemptEntity } from '../outbound-webhooks/outbound-delivery-attempt.entity.js';
import { OutboundDeliveryEntity } from '../outbound-webhooks/outbound-delivery.entity.js';
import { WebhookEndpointEntity } from '../outbound-webhooks/webhook-endpoint.entity.js';
import { WebhookEndpointsRepository } from '../outbound-webhooks/webhook-endpoints.repository.js';
import { WebhookEndpointsService } from '../outbound-webhooks/webhook-endpoints.service.js';
import { DeliveryAnnouncer } from './delivery-announcer.js';

/**
 * The services the admin REST API calls, so the CLI applies the same rules and writes the same audit
 * entries. Providers only, not the feature modules: those start the delivery worker and the rate
 * limiter's Redis connection, and their controllers need the interceptors and guards of a server, none
 * of which a one-command process may run. The worker's place is taken by DeliveryAnnouncer (the services
 * that inject DeliveryWorker call only its announce()). MetricsService is there for the counters some
 * services register; nothing serves them.
 */
@Module({})
export class CliModule {
  static forRoot(config: AppConfig, databaseUrl: string): DynamicModule {
    return {
      module: CliModule,
      imports: [
        ConfigModule.forRoot(config),
        // A small pool without the request bounds: a command's statements may rightly wait longer. The
        // schema was brought up to date before (openOperatorDatabase).
        DatabaseModule.forRoot({
          config,
          url: databaseUrl,
          pool: { poolSize: 2, lifetimeSeconds: 60, applicationName: 'tax-document-gateway-cli' },
          migrate: false,
        }),
        TypeOrmModule.forFeature([
          ApiKeyEntity,
          AdminEntity,
          AdminTokenEntity,
          AdminSessionEntity,
          AdminOidcLoginEntity,
          AuditLogEntity,
          DocumentEntity,
          DocumentEventEntity,
          BankEventEntity,
          WebhookEndpointEntity,
          OutboundDeliveryEntity,
          OutboundDeliveryAttemptEntity,
          ArchiveEntryEntity,
          ArchiveNodeEntity,
          ArchiveCheckpointEntity,
          ArchiveVerificationEntity,
        ]),
      ],
      providers: [
        MetricsService,
        FeedSignal,
        DocumentsRepository,
        DocumentsService,
        DocumentEventsRepository,
        DocumentEventsService,
        DocumentHistoryService,
        PaymentsRepository,
        PaymentsService,
        AuditLogRepository,
        AuditLogService,
        ApiKeysRepository,
        ApiKeysService,
        KeyUsageRecorder,
        AdminApiKeysService,
        AdminsRepository,
        AdminsService,
        WebhookEndpointsRepository,
        WebhookEndpointsService,
        OutboundDeliveriesRepository,
        OutboundDeliveriesService,
        DeliveryClaimsRepository,
        DeliveryAnnouncer,
        { provide: DeliveryWorker, useExisting: DeliveryAnnouncer },
        AdminOperationsService,
        ArchiveRepository,
        ArchiveVerifier,
      ],
    };
  }
}

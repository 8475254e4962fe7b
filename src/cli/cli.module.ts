import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AdminEntity, AdminOidcLoginEntity, AdminSessionEntity, AdminTokenEntity } from '../admin/admin.entity';
import { AdminApiKeysService } from '../admin/admin-api-keys.service';
import { AdminOperationsService } from '../admin/admin-operations.service';
import { AdminsRepository } from '../admin/admins.repository';
import { AdminsService } from '../admin/admins.service';
import { AuditLogEntity } from '../admin/audit-log.entity';
import { AuditLogRepository } from '../admin/audit-log.repository';
import { AuditLogService } from '../admin/audit-log.service';
import { ApiKeyEntity } from '../auth/api-key.entity';
import { ApiKeysRepository } from '../auth/api-keys.repository';
import { ApiKeysService } from '../auth/api-keys.service';
import { KeyUsageRecorder } from '../auth/key-usage.recorder';
import { AppConfig } from '../config/app-config';
import { ConfigModule } from '../config/config.module';
import { DatabaseModule } from '../database/database.module';
import { BankEventEntity } from '../documents/bank-event.entity';
import { DocumentEventEntity } from '../documents/document-event.entity';
import { DocumentEntity } from '../documents/document.entity';
import { DocumentEventsRepository } from '../documents/document-events.repository';
import { DocumentEventsService } from '../documents/document-events.service';
import { DocumentsRepository } from '../documents/documents.repository';
import { DocumentsService } from '../documents/documents.service';
import { FeedSignal } from '../documents/feed-signal';
import { PaymentsRepository } from '../documents/payments.repository';
import { PaymentsService } from '../documents/payments.service';
import { MetricsService } from '../metrics/metrics.service';
import { DeliveryClaimsRepository } from '../outbound-webhooks/delivery-claims.repository';
import { DeliveryWorker } from '../outbound-webhooks/delivery-worker';
import { OutboundDeliveriesRepository } from '../outbound-webhooks/outbound-deliveries.repository';
import { OutboundDeliveriesService } from '../outbound-webhooks/outbound-deliveries.service';
import { OutboundDeliveryAttemptEntity } from '../outbound-webhooks/outbound-delivery-attempt.entity';
import { OutboundDeliveryEntity } from '../outbound-webhooks/outbound-delivery.entity';
import { WebhookEndpointEntity } from '../outbound-webhooks/webhook-endpoint.entity';
import { WebhookEndpointsRepository } from '../outbound-webhooks/webhook-endpoints.repository';
import { WebhookEndpointsService } from '../outbound-webhooks/webhook-endpoints.service';
import { DeliveryAnnouncer } from './delivery-announcer';

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
        DatabaseModule.forRoot({ config, url: databaseUrl, pool: { poolSize: 2, lifetimeSeconds: 60, applicationName: 'tax-document-gateway-cli' }, migrate: false }),
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
        ]),
      ],
      providers: [
        MetricsService,
        FeedSignal,
        DocumentsRepository,
        DocumentsService,
        DocumentEventsRepository,
        DocumentEventsService,
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
      ],
    };
  }
}

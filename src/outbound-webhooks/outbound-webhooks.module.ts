import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DocumentsModule } from '../documents/documents.module';
import { MetricsModule } from '../metrics/metrics.module';
import { DeliveryClaimsRepository } from './delivery-claims.repository';
import { DeliveryWorker } from './delivery-worker';
import { EventLoopLoad } from './event-loop-load';
import { OutboundDeliveriesRepository } from './outbound-deliveries.repository';
import { OutboundDeliveriesService } from './outbound-deliveries.service';
import { OutboundMetrics } from './outbound-metrics';
import { OutboundDeliveryAttemptEntity } from './outbound-delivery-attempt.entity';
import { OutboundDeliveryEntity } from './outbound-delivery.entity';
import { WebhookEndpointEntity } from './webhook-endpoint.entity';
import { WebhookEndpointsController } from './webhook-endpoints.controller';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { WebhookEndpointsService } from './webhook-endpoints.service';

/** Push notifications: client endpoints, and the engine that delivers the feed's events to them. */
@Module({
  imports: [TypeOrmModule.forFeature([WebhookEndpointEntity, OutboundDeliveryEntity, OutboundDeliveryAttemptEntity]), MetricsModule, DocumentsModule],
  controllers: [WebhookEndpointsController],
  providers: [
    WebhookEndpointsRepository,
    WebhookEndpointsService,
    OutboundDeliveriesRepository,
    OutboundDeliveriesService,
    DeliveryClaimsRepository,
    OutboundMetrics,
    EventLoopLoad,
    DeliveryWorker,
  ],
  exports: [WebhookEndpointsService, OutboundDeliveriesService],
})
export class OutboundWebhooksModule {}

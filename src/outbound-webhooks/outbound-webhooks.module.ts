import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DocumentsModule } from '../documents/documents.module.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { DeliveryClaimsRepository } from './delivery-claims.repository.js';
import { DeliveryWorker } from './delivery-worker.js';
import { EventLoopLoad } from './event-loop-load.js';
import { OutboundDeliveriesRepository } from './outbound-deliveries.repository.js';
import { OutboundDeliveriesService } from './outbound-deliveries.service.js';
import { OutboundMetrics } from './outbound-metrics.js';
import { OutboundDeliveryAttemptEntity } from './outbound-delivery-attempt.entity.js';
import { OutboundDeliveryEntity } from './outbound-delivery.entity.js';
import { WebhookEndpointEntity } from './webhook-endpoint.entity.js';
import { WebhookEndpointsController } from './webhook-endpoints.controller.js';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository.js';
import { WebhookEndpointsService } from './webhook-endpoints.service.js';

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

import { Module } from '@nestjs/common';
import { MetricsModule } from '../metrics/metrics.module';
import { DeliveryWorker } from './delivery-worker';
import { EventLoopLoad } from './event-loop-load';
import { OutboundDeliveriesService } from './outbound-deliveries.service';
import { OutboundMetrics } from './outbound-metrics';
import { WebhookEndpointsController } from './webhook-endpoints.controller';
import { WebhookEndpointsService } from './webhook-endpoints.service';

/** Push notifications: client endpoints, and the engine that delivers the feed's events to them. */
@Module({
  imports: [MetricsModule],
  controllers: [WebhookEndpointsController],
  providers: [WebhookEndpointsService, OutboundDeliveriesService, OutboundMetrics, EventLoopLoad, DeliveryWorker],
  exports: [WebhookEndpointsService, OutboundDeliveriesService],
})
export class OutboundWebhooksModule {}

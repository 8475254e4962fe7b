import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { decodeCursor, encodeCursor, isBigintPosition } from '../common/cursor';
import { Database, Queryable, Transaction } from '../database/database';
import { DeliveryWorker } from './delivery-worker';
import { AdminDeliveriesQueryDto, AdminDeliveryDto, DeliveryPageDto, DeliveryResponseDto, ListDeliveriesQueryDto } from './dto/delivery.dto';
import { DeliveryRow, OutboundDeliveriesRepository } from './outbound-deliveries.repository';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { WebhookEndpointsService } from './webhook-endpoints.service';

@Injectable()
export class OutboundDeliveriesService {
  constructor(
    private readonly db: Database,
    private readonly deliveries: OutboundDeliveriesRepository,
    private readonly endpointRows: WebhookEndpointsRepository,
    private readonly endpoints: WebhookEndpointsService,
    private readonly worker: DeliveryWorker,
  ) {}

  async list(source: string, endpointId: string, query: ListDeliveriesQueryDto): Promise<DeliveryPageDto> {
    await this.endpoints.find(this.db, source, endpointId);
    const limit = query.limit ?? 20;
    const before = query.cursor ? decodeCursor('d', query.cursor, 'cursor') : undefined;
    const rows = await this.deliveries.page(endpointId, { status: query.status, before }, limit + 1);
    const page = rows.slice(0, limit);
    return { data: page.map(toDeliveryResponse), nextCursor: rows.length > limit ? encodeCursor('d', page.at(-1)!.id) : null };
  }

  /** A failed or pending delivery is attempted again at once, from the start of the retry schedule. */
  async retry(tx: Transaction, source: string, endpointId: string, deliveryId: string): Promise<DeliveryResponseDto> {
    await this.endpoints.find(tx, source, endpointId);
    const restarted = await this.restart(tx, deliveryId, endpointId);
    tx.afterCommit(() => this.worker.announce());
    return toDeliveryResponse(restarted.delivery);
  }

  async listForAdmin(query: AdminDeliveriesQueryDto): Promise<AdminDeliveryDto[]> {
    const rows = await this.deliveries.pageForAdmin({ source: query.source, status: query.status }, query.limit ?? 50);
    return rows.map((row) => ({ ...toDeliveryResponse(row), source: row.source, endpointId: row.endpointId, endpointUrl: row.endpointUrl }));
  }

  /** The console's Retry: any source, but still only a failed or pending delivery. */
  async retryForAdmin(deliveryId: string): Promise<AdminDeliveryDto> {
    const { delivery, endpointUrl } = await this.restart(this.db, deliveryId);
    // Due at once: an idle worker picks the delivery up now.
    this.worker.announce();
    return { ...toDeliveryResponse(delivery), source: delivery.source, endpointId: delivery.endpointId, endpointUrl };
  }

  private async restart(db: Queryable, deliveryId: string, endpointId?: string): Promise<{ delivery: DeliveryRow; endpointUrl: string }> {
    const delivery = isBigintPosition(deliveryId) ? await this.deliveries.find(db, deliveryId, endpointId) : null;
    if (!delivery) throw new AppError('NOT_FOUND', 'No such delivery');
    if (delivery.status === 'succeeded') throw new AppError('INVALID_STATE_TRANSITION', 'The delivery has already succeeded');
    const endpoint = await this.endpointRows.findById(db, delivery.endpointId);
    if (!endpoint?.enabled) throw new AppError('INVALID_STATE_TRANSITION', 'The endpoint is disabled; enable it before retrying its deliveries');
    const restarted = await this.deliveries.restart(db, delivery.id);
    if (!restarted) throw new AppError('INVALID_STATE_TRANSITION', 'The delivery has already succeeded');
    return { delivery: restarted, endpointUrl: endpoint.url };
  }
}

function toDeliveryResponse(row: DeliveryRow): DeliveryResponseDto {
  return {
    id: row.id,
    eventId: row.eventId,
    eventType: row.eventType,
    status: row.status,
    attempts: row.attempts,
    lastAttemptAt: row.lastAttemptAt?.toISOString() ?? null,
    lastResponseStatus: row.lastResponseStatus,
    lastError: row.lastError,
    nextAttemptAt: row.nextAttemptAt?.toISOString() ?? null,
  };
}

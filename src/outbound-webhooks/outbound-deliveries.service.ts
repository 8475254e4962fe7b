import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { decodeCursor, encodeCursor, isBigintPosition } from '../common/cursor';
import { Database, Db, Transaction } from '../database/database';
import { DeliveryWorker } from './delivery-worker';
import { AdminDeliveriesQueryDto, AdminDeliveryDto, DeliveryPageDto, DeliveryResponseDto, ListDeliveriesQueryDto } from './dto/delivery.dto';
import { OutboundDeliveryEntity } from './outbound-delivery.entity';
import { WebhookEndpointEntity } from './webhook-endpoint.entity';
import { WebhookEndpointsService } from './webhook-endpoints.service';

@Injectable()
export class OutboundDeliveriesService {
  constructor(
    private readonly db: Database,
    private readonly worker: DeliveryWorker,
    private readonly endpoints: WebhookEndpointsService,
  ) {}

  async list(source: string, endpointId: string, query: ListDeliveriesQueryDto): Promise<DeliveryPageDto> {
    await this.endpoints.find(this.db, source, endpointId);
    const limit = query.limit ?? 20;
    const builder = this.db.manager
      .createQueryBuilder(OutboundDeliveryEntity, 'd')
      .where('d.endpoint_id = :endpointId', { endpointId })
      .orderBy('d.id', 'DESC')
      .limit(limit + 1);
    if (query.status) builder.andWhere('d.status = :status', { status: query.status });
    if (query.cursor) builder.andWhere('d.id < :before', { before: decodeCursor('d', query.cursor, 'cursor') });
    const rows = await builder.getMany();
    const page = rows.slice(0, limit);
    return { data: page.map((row) => this.map(row)), nextCursor: rows.length > limit ? encodeCursor('d', page.at(-1)!.id) : null };
  }

  /** A failed or pending delivery is attempted again at once, from the start of the retry schedule. */
  async retry(tx: Transaction, source: string, endpointId: string, deliveryId: string): Promise<DeliveryResponseDto> {
    await this.endpoints.find(tx, source, endpointId);
    return this.map((await this.restart(tx, { endpointId, deliveryId })).delivery);
  }

  async listForAdmin(query: AdminDeliveriesQueryDto): Promise<AdminDeliveryDto[]> {
    const builder = this.db.manager
      .createQueryBuilder(OutboundDeliveryEntity, 'd')
      .innerJoin('webhook_endpoints', 'w', 'w.id = d.endpoint_id')
      .addSelect('w.url', 'endpoint_url')
      .orderBy('d.id', 'DESC')
      .limit(query.limit ?? 50);
    if (query.source) builder.andWhere('d.source = :source', { source: query.source });
    if (query.status) builder.andWhere('d.status = :status', { status: query.status });
    const { entities, raw } = await builder.getRawAndEntities<{ endpoint_url: string }>();
    return entities.map((row, index) => ({ ...this.map(row), source: row.source, endpointId: row.endpointId, endpointUrl: raw[index].endpoint_url }));
  }

  /** The console's Retry: any source, but still only a failed or pending delivery. */
  async retryForAdmin(deliveryId: string): Promise<AdminDeliveryDto> {
    const { delivery, endpoint } = await this.restart(this.db, { deliveryId });
    return { ...this.map(delivery), source: delivery.source, endpointId: endpoint.id, endpointUrl: endpoint.url };
  }

  private async restart(db: Db, { endpointId, deliveryId }: { endpointId?: string; deliveryId: string }) {
    const delivery = isBigintPosition(deliveryId)
      ? await db.manager.findOneBy(OutboundDeliveryEntity, { id: deliveryId, ...(endpointId ? { endpointId } : {}) })
      : null;
    if (!delivery) throw new AppError('NOT_FOUND', 'No such delivery');
    if (delivery.status === 'succeeded') throw new AppError('INVALID_STATE_TRANSITION', 'The delivery has already succeeded');
    const endpoint = await db.manager.findOneByOrFail(WebhookEndpointEntity, { id: delivery.endpointId });
    if (!endpoint.enabled) throw new AppError('INVALID_STATE_TRANSITION', 'The endpoint is disabled; enable it before retrying its deliveries');
    const [rows] = await db.manager.query(
      `UPDATE outbound_deliveries SET status = 'pending', retry_step = 0, next_attempt_at = now()
        WHERE id = $1 AND status <> 'succeeded' RETURNING next_attempt_at`,
      [delivery.id],
    );
    if (rows.length === 0) throw new AppError('INVALID_STATE_TRANSITION', 'The delivery has already succeeded');
    // Delivered on commit: an idle worker picks the delivery up at once.
    db.afterCommit(() => this.worker.announce());
    return { delivery: Object.assign(delivery, { status: 'pending' as const, retryStep: 0, nextAttemptAt: rows[0].next_attempt_at as Date }), endpoint };
  }

  private map(row: OutboundDeliveryEntity): DeliveryResponseDto {
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
}

import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { decodeCursor, encodeCursor, isBigintPosition, pageOf } from '../common/cursor.js';
import { EntityManager, In } from 'typeorm';
import { afterCommit } from '../database/after-commit.js';
import { Transaction } from '../database/transaction.js';
import { PurgeBatch, PurgeRange } from '../database/purge-batch.js';
import { DocumentEventsService } from '../documents/document-events.service.js';
import { DeliveryWorker } from './delivery-worker.js';
import { AdminDeliveryDto, DeliveryPageDto, DeliveryResponseDto, ListDeliveriesQueryDto } from './dto/delivery.dto.js';
import { OutboundDeliveriesRepository } from './outbound-deliveries.repository.js';
import { DeliveryStatus, OutboundDeliveryEntity } from './outbound-delivery.entity.js';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository.js';
import { WebhookEndpointsService } from './webhook-endpoints.service.js';

@Injectable()
export class OutboundDeliveriesService {
  constructor(
    private readonly deliveries: OutboundDeliveriesRepository,
    private readonly endpointRows: WebhookEndpointsRepository,
    private readonly endpoints: WebhookEndpointsService,
    private readonly worker: DeliveryWorker,
    private readonly events: DocumentEventsService,
  ) {}

  async list(source: string, endpointId: string, query: ListDeliveriesQueryDto): Promise<DeliveryPageDto> {
    await this.endpoints.find(source, endpointId);
    const limit = query.limit ?? 20;
    const before = query.cursor ? decodeCursor('d', query.cursor, 'cursor') : undefined;
    const rows = await this.deliveries.page(endpointId, { status: query.status, before }, limit + 1);
    const page = pageOf(rows, limit, (last) => encodeCursor('d', last.id));
    return { data: page.rows.map(toDeliveryResponse), nextCursor: page.nextCursor };
  }

  /** A failed or pending delivery is attempted again at once, from the start of the retry schedule. */
  async retry(request: Transaction, source: string, endpointId: string, deliveryId: string): Promise<DeliveryResponseDto> {
    const tx = await request.manager();
    await this.endpoints.find(source, endpointId, tx);
    const restarted = await this.restart(tx, deliveryId, endpointId);
    afterCommit(tx, () => this.worker.announce());
    return toDeliveryResponse(restarted.delivery);
  }

  /**
   * Every source's deliveries, newest first, with the document each event is about. `attention`: those
   * failing now as well as those given up on (failed, or still pending after a failed attempt).
   */
  async pageForAdmin(
    query: { source?: string; status?: DeliveryStatus; attention?: boolean; documentId?: string; cursor?: string },
    limit: number,
  ): Promise<{ data: AdminDeliveryDto[]; nextCursor: string | null }> {
    const before = query.cursor ? decodeCursor('d', query.cursor, 'cursor') : undefined;
    const eventIds = query.documentId ? (await this.events.ofDocument(query.documentId)).map((event) => event.id) : undefined;
    const rows = await this.deliveries.pageForAdmin({ ...query, eventIds, before }, limit + 1);
    const page = pageOf(rows, limit, (last) => encodeCursor('d', last.id));
    const [documents, urls] = await Promise.all([this.events.documentsOf(page.rows.map((row) => row.eventId)), this.urlsOf(page.rows)]);
    return { data: page.rows.map((row) => toAdminDelivery(row, urls.get(row.endpointId) ?? '', documents)), nextCursor: page.nextCursor };
  }

  /** An administrator's Retry: any source, but still only a failed or pending delivery; in `tx`, where the caller records who did it. */
  async retryForAdmin(tx: EntityManager, deliveryId: string): Promise<AdminDeliveryDto> {
    const { delivery, endpointUrl } = await this.restart(tx, deliveryId);
    // Due at once: an idle worker picks the delivery up as soon as it is committed.
    afterCommit(tx, () => this.worker.announce());
    return toAdminDelivery(delivery, endpointUrl, await this.events.documentsOf([delivery.eventId]));
  }

  /** Push attempts of the last `hours` hours by outcome, in buckets of `bucketMinutes` (the console's chart). */
  async attemptsPerBucket(hours: number, bucketMinutes: number): Promise<Array<{ at: string; succeeded: number; retried: number; failed: number }>> {
    return (await this.deliveries.attemptsPerBucket(hours, bucketMinutes)).map((row) => ({ ...row, at: row.at.toISOString() }));
  }

  /** Retention: a batch of finished deliveries past RETENTION_DELIVERIES, with their attempts; pending ones are kept. */
  purgeFinished(tx: EntityManager, range: PurgeRange): Promise<PurgeBatch> {
    return this.deliveries.purge(tx, range);
  }

  /** The URL of each of these deliveries' endpoints. */
  private async urlsOf(deliveries: OutboundDeliveryEntity[]): Promise<Map<string, string>> {
    const ids = [...new Set(deliveries.map((delivery) => delivery.endpointId))];
    if (ids.length === 0) return new Map();
    return new Map((await this.endpointRows.findAll({ id: In(ids) })).map((endpoint) => [endpoint.id, endpoint.url]));
  }

  private async restart(tx: EntityManager, deliveryId: string, endpointId?: string): Promise<{ delivery: OutboundDeliveryEntity; endpointUrl: string }> {
    const delivery = isBigintPosition(deliveryId) ? await this.deliveries.find(deliveryId, endpointId, tx) : null;
    if (!delivery) throw new AppError('NOT_FOUND', 'No such delivery');
    if (delivery.status === 'succeeded') throw new AppError('INVALID_STATE_TRANSITION', 'The delivery has already succeeded');
    const endpoint = await this.endpointRows.findById(delivery.endpointId, tx);
    if (!endpoint?.enabled) throw new AppError('INVALID_STATE_TRANSITION', 'The endpoint is disabled; enable it before retrying its deliveries');
    const restarted = await this.deliveries.restart(tx, delivery.id);
    if (!restarted) throw new AppError('INVALID_STATE_TRANSITION', 'The delivery has already succeeded');
    return { delivery: restarted, endpointUrl: endpoint.url };
  }
}

function toDeliveryResponse(row: OutboundDeliveryEntity): DeliveryResponseDto {
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

function toAdminDelivery(row: OutboundDeliveryEntity, endpointUrl: string, documents: Map<string, string>): AdminDeliveryDto {
  return { ...toDeliveryResponse(row), source: row.source, endpointId: row.endpointId, endpointUrl, documentId: documents.get(row.eventId) ?? null };
}

import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Brackets, EntityManager, FindOptionsWhere, LessThan, Not, Repository } from 'typeorm';
import { PurgeBatch, PurgeRange } from '../database/purge-batch.js';
import { OutboundDeliveryAttemptEntity } from './outbound-delivery-attempt.entity.js';
import { DeliveryStatus, OutboundDeliveryEntity } from './outbound-delivery.entity.js';

/**
 * Retention: of the $3 deliveries after id $1, the finished ones (succeeded or failed) whose last attempt
 * was before now() - $2 (an ISO 8601 duration), with their attempts (ON DELETE CASCADE). A pending one is
 * never taken, and the conditions are on the deleted row itself, so one retried meanwhile (pending again)
 * is left. `more`: all $3 were created before the cut-off, so older finished ones may follow.
 */
const PURGE = `WITH head AS (
     SELECT id, created_at < now() - $2::interval AS old FROM outbound_deliveries WHERE id > $1::bigint ORDER BY id LIMIT $3),
   gone AS (
     DELETE FROM outbound_deliveries d USING head
      WHERE d.id = head.id AND head.old AND d.status IN ('succeeded', 'failed') AND COALESCE(d.last_attempt_at, d.created_at) < now() - $2::interval
     RETURNING 1)
   SELECT (SELECT count(*) FROM gone)::int AS deleted, (SELECT max(id) FROM head)::text AS last,
          COALESCE((SELECT count(*) = $3 AND bool_and(old) FROM head), false) AS more`;

export interface AdminDeliveryFilter {
  source?: string;
  status?: DeliveryStatus;
  /** Failed, or still pending after a failed attempt. */
  attention?: boolean;
  /** Only deliveries of these feed events. */
  eventIds?: string[];
  /** Only deliveries before this id. */
  before?: string;
}

/** Push deliveries as the API and the console read them (the worker has its own: DeliveryClaimsRepository). */
@Injectable()
export class OutboundDeliveriesRepository {
  constructor(
    @InjectRepository(OutboundDeliveryEntity) private readonly deliveries: Repository<OutboundDeliveryEntity>,
    @InjectRepository(OutboundDeliveryAttemptEntity) private readonly attempts: Repository<OutboundDeliveryAttemptEntity>,
  ) {}

  /** An endpoint's delivery log, newest first. */
  page(endpointId: string, filter: { status?: DeliveryStatus; before?: string }, limit: number): Promise<OutboundDeliveryEntity[]> {
    const where: FindOptionsWhere<OutboundDeliveryEntity> = { endpointId };
    if (filter.status) where.status = filter.status;
    if (filter.before) where.id = LessThan(filter.before);
    return this.deliveries.find({ where, order: { id: 'DESC' }, take: limit });
  }

  /** Every source's deliveries, newest first. */
  pageForAdmin(filter: AdminDeliveryFilter, limit: number): Promise<OutboundDeliveryEntity[]> {
    const query = this.deliveries.createQueryBuilder('d');
    if (filter.source) query.andWhere('d.source = :source', { source: filter.source });
    if (filter.status) query.andWhere('d.status = :status', { status: filter.status });
    if (filter.attention) query.andWhere(new Brackets((either) => either.where("d.status = 'failed'").orWhere("d.status = 'pending' AND d.attempts > 0")));
    if (filter.eventIds) query.andWhere('d.eventId IN (:...eventIds)', { eventIds: filter.eventIds.length ? filter.eventIds : [null] });
    if (filter.before) query.andWhere('d.id < :before', { before: filter.before });
    return query.orderBy('d.id', 'DESC').limit(limit).getMany();
  }

  /**
   * Push attempts of the last `hours` hours in buckets of `bucketMinutes`: succeeded (a 2xx), retried (failed,
   * and its delivery went on: a later attempt, or one still due) or failed (the last attempt of a delivery that
   * gave up). A delivery that succeeded after retries thus counts no failure. An empty bucket has no row.
   */
  attemptsPerBucket(hours: number, bucketMinutes: number): Promise<Array<{ at: Date; succeeded: number; retried: number; failed: number }>> {
    const succeeded = 'a.error IS NULL AND a.responseStatus BETWEEN 200 AND 299';
    const gaveUp = `d.status = 'failed' AND NOT EXISTS (SELECT 1 FROM outbound_delivery_attempts later WHERE later.delivery_id = a.deliveryId AND later.id > a.id)`;
    return this.attempts
      .createQueryBuilder('a')
      .innerJoin('a.delivery', 'd')
      .select("date_bin(make_interval(mins => :minutes), a.attemptedAt, 'epoch')", 'at')
      .addSelect(`count(*) FILTER (WHERE ${succeeded})::int`, 'succeeded')
      .addSelect(`count(*) FILTER (WHERE NOT (${succeeded}) AND NOT (${gaveUp}))::int`, 'retried')
      .addSelect(`count(*) FILTER (WHERE NOT (${succeeded}) AND ${gaveUp})::int`, 'failed')
      .where('a.attemptedAt > now() - make_interval(hours => :hours)', { hours, minutes: bucketMinutes })
      .groupBy('at')
      .orderBy('at')
      .getRawMany();
  }

  /** `endpointId`: only a delivery of that endpoint. */
  find(id: string, endpointId?: string, tx: EntityManager = this.deliveries.manager): Promise<OutboundDeliveryEntity | null> {
    return tx.getRepository(OutboundDeliveryEntity).findOneBy(endpointId ? { id, endpointId } : { id });
  }

  /** Due again at once, from the start of the retry schedule; null when it has succeeded meanwhile. */
  async restart(tx: EntityManager, id: string): Promise<OutboundDeliveryEntity | null> {
    const { affected } = await tx
      .getRepository(OutboundDeliveryEntity)
      .update({ id, status: Not('succeeded') }, { status: 'pending', retryStep: 0, nextAttemptAt: () => 'now()' });
    return affected ? tx.getRepository(OutboundDeliveryEntity).findOneByOrFail({ id }) : null;
  }

  /** An endpoint's deliveries, with their attempts (ON DELETE CASCADE), as the endpoint goes. */
  async deleteOfEndpoint(tx: EntityManager, endpointId: string): Promise<void> {
    await tx.getRepository(OutboundDeliveryEntity).delete({ endpointId });
  }

  async purge(tx: EntityManager, range: PurgeRange): Promise<PurgeBatch> {
    const [batch] = await tx.query<PurgeBatch[]>(PURGE, [range.after, range.olderThan, range.limit]);
    return batch;
  }
}

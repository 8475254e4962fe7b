import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, FindOptionsWhere, In, Repository } from 'typeorm';
import { WebhookEndpointEntity } from './webhook-endpoint.entity.js';

export type NewEndpoint = Pick<WebhookEndpointEntity, 'source' | 'url' | 'description' | 'eventTypes' | 'secret'>;

/** What a change of an endpoint writes: its settings, and whether it is on (and why not). */
export type EndpointChange = Partial<Pick<WebhookEndpointEntity, 'url' | 'description' | 'eventTypes' | 'enabled' | 'disabledReason' | 'failingSince'>>;

/**
 * The per-source endpoints lock (pg_advisory_xact_lock(namespace, hashtext(source))), which the feed's
 * trigger also takes, shared, before it enqueues deliveries (migration OutboundEndpointLockNotForeignKey).
 * Held exclusively, it counts a source's endpoints against the limit and deletes one with its deliveries.
 */
export const ENDPOINTS_LOCK_NAMESPACE = 7_340_216;

/** Every query of the webhook_endpoints table. */
@Injectable()
export class WebhookEndpointsRepository {
  constructor(@InjectRepository(WebhookEndpointEntity) private readonly endpoints: Repository<WebhookEndpointEntity>) {}

  /** Takes the source's endpoints lock, exclusively, until `tx` ends (an advisory lock: SQL by hand). */
  async lockSource(tx: EntityManager, source: string): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(${ENDPOINTS_LOCK_NAMESPACE}, hashtext($1))`, [source]);
  }

  count(tx: EntityManager, source: string): Promise<number> {
    return tx.getRepository(WebhookEndpointEntity).countBy({ source });
  }

  async insert(tx: EntityManager, endpoint: NewEndpoint): Promise<WebhookEndpointEntity> {
    const { id } = await tx.getRepository(WebhookEndpointEntity).save(tx.create(WebhookEndpointEntity, endpoint));
    return tx.getRepository(WebhookEndpointEntity).findOneByOrFail({ id });
  }

  /**
   * A source's endpoints, only their URLs and why they are off, for comparing URLs (sameReceiverAs); the
   * caller holds the source's lock. `stoppedOnly`: those an administrator stopped.
   */
  urlsOf(tx: EntityManager, source: string, stoppedOnly = false): Promise<Pick<WebhookEndpointEntity, 'id' | 'url' | 'disabledReason'>[]> {
    return tx
      .getRepository(WebhookEndpointEntity)
      .find({ select: { id: true, url: true, disabledReason: true }, where: { source, ...(stoppedOnly ? { disabledReason: 'admin' as const } : {}) } });
  }

  /** A source's endpoints, oldest first. */
  list(source: string): Promise<WebhookEndpointEntity[]> {
    return this.endpoints.find({ where: { source }, order: { createdAt: 'ASC', id: 'ASC' } });
  }

  /** `tx`: read in that transaction. */
  find(source: string, id: string, tx: EntityManager = this.endpoints.manager): Promise<WebhookEndpointEntity | null> {
    return tx.getRepository(WebhookEndpointEntity).findOneBy({ id, source });
  }

  findAll(where: FindOptionsWhere<WebhookEndpointEntity>): Promise<WebhookEndpointEntity[]> {
    return this.endpoints.findBy(where);
  }

  findById(id: string, tx: EntityManager = this.endpoints.manager): Promise<WebhookEndpointEntity | null> {
    return tx.getRepository(WebhookEndpointEntity).findOneBy({ id });
  }

  /** Of any source (`source` undefined) or one; locked (FOR UPDATE) until `tx` ends. */
  findForUpdate(tx: EntityManager, id: string, source?: string): Promise<WebhookEndpointEntity | null> {
    return tx.getRepository(WebhookEndpointEntity).findOne({ where: source ? { id, source } : { id }, lock: { mode: 'pessimistic_write' } });
  }

  /** Writes the fields `change` gives (updatedAt with them; undefined ones stay) and reads the endpoint back as stored. */
  async update(tx: EntityManager, id: string, change: EndpointChange): Promise<WebhookEndpointEntity> {
    const given = definedOnly(change);
    if (Object.keys(given).length > 0) await tx.getRepository(WebhookEndpointEntity).update({ id }, given);
    return tx.getRepository(WebhookEndpointEntity).findOneByOrFail({ id });
  }

  /** The same switch for the endpoints `ids`; the caller holds their source's lock. */
  async switchAll(tx: EntityManager, ids: string[], change: Pick<EndpointChange, 'enabled' | 'disabledReason' | 'failingSince'>): Promise<void> {
    if (ids.length > 0) await tx.getRepository(WebhookEndpointEntity).update({ id: In(ids) }, definedOnly(change));
  }

  /** False when there was none. The caller holds the source's lock and deletes the endpoint's deliveries with it. */
  async delete(tx: EntityManager, source: string, id: string): Promise<boolean> {
    const { affected } = await tx.getRepository(WebhookEndpointEntity).delete({ id, source });
    return Boolean(affected);
  }

  /** The new secret signs from now on; the previous one beside it until `graceSeconds` from now. Null when there is no such endpoint. */
  async rotateSecret(tx: EntityManager, source: string, id: string, secret: string, graceSeconds: number): Promise<WebhookEndpointEntity | null> {
    const { affected } = await tx
      .getRepository(WebhookEndpointEntity)
      .createQueryBuilder()
      .update()
      .set({ previousSecret: () => 'secret', secret, previousSecretExpiresAt: () => 'now() + make_interval(secs => :grace)' })
      .where({ id, source })
      .setParameter('grace', graceSeconds)
      .execute();
    return affected ? tx.getRepository(WebhookEndpointEntity).findOneByOrFail({ id }) : null;
  }

  /** Every source's endpoints or one's, newest first; `before` the cursor's position (created_at in µs) and id. */
  pageForAdmin(source: string | undefined, before: { position: string; id: string } | null, limit: number): Promise<WebhookEndpointEntity[]> {
    const query = this.endpoints.createQueryBuilder('w');
    if (source) query.andWhere('w.source = :source', { source });
    if (before) query.andWhere('(w.created_at, w.id) < (to_timestamp(CAST(:position AS bigint) / 1000000.0), CAST(:id AS uuid))', before);
    return query.orderBy('w.createdAt', 'DESC').addOrderBy('w.id', 'DESC').limit(limit).getMany();
  }
}

/** The fields a change gives: undefined ones stay as they are. */
function definedOnly(change: EndpointChange): EndpointChange {
  return Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined));
}

import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { isUuid } from '../common/validation';
import { AppConfig } from '../config/app-config';
import { Database, Db, Transaction } from '../database/database';
import { DeliveryWorker } from './delivery-worker';
import { AdminWebhookEndpointDto, CreateWebhookEndpointDto, UpdateWebhookEndpointDto, WebhookEndpointResponseDto, WebhookEndpointWithSecretDto } from './dto/webhook-endpoint.dto';
import { checkEndpointUrl } from './endpoint-url';
import { generateSecret } from './signing';
import { OUTBOUND_EVENT_TYPES, WebhookEndpointEntity } from './webhook-endpoint.entity';

export const MAX_ENDPOINTS_PER_SOURCE = 10;
/**
 * Namespace of the per-source endpoints lock (pg_advisory_xact_lock(namespace, hashtext(source))), which
 * the feed's trigger also takes, shared (migration OutboundEndpointLockNotForeignKey).
 */
export const ENDPOINTS_LOCK_NAMESPACE = 7_340_216;

const lockEndpoints = (tx: Transaction, source: string) =>
  tx.manager.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [ENDPOINTS_LOCK_NAMESPACE, source]);

@Injectable()
export class WebhookEndpointsService {
  constructor(
    private readonly db: Database,
    private readonly worker: DeliveryWorker,
    private readonly config: AppConfig,
  ) {}

  /** Runs in the idempotency transaction, so a replay of the POST returns this same secret. */
  async create(tx: Transaction, source: string, dto: CreateWebhookEndpointDto): Promise<WebhookEndpointWithSecretDto> {
    await checkEndpointUrl(dto.url, this.config.OUTBOUND_WEBHOOKS_ALLOW_PRIVATE);
    const manager = tx.manager;
    // Counted under the source's lock, so parallel creations cannot pass the limit together.
    await lockEndpoints(tx, source);
    if ((await manager.countBy(WebhookEndpointEntity, { source })) >= MAX_ENDPOINTS_PER_SOURCE) {
      throw new AppError('VALIDATION_ERROR', `A source can register at most ${MAX_ENDPOINTS_PER_SOURCE} webhook endpoints`, [
        { field: 'url', message: `this source already has ${MAX_ENDPOINTS_PER_SOURCE} endpoints; delete one first` },
      ]);
    }
    const endpoint = await manager.save(
      manager.create(WebhookEndpointEntity, {
        source,
        url: dto.url,
        description: dto.description ?? null,
        eventTypes: dto.eventTypes ?? [...OUTBOUND_EVENT_TYPES],
        secret: generateSecret(),
      }),
    );
    return { ...this.map(endpoint), secret: endpoint.secret };
  }

  async list(source: string): Promise<WebhookEndpointResponseDto[]> {
    const endpoints = await this.db.manager.find(WebhookEndpointEntity, { where: { source }, order: { createdAt: 'ASC' } });
    return endpoints.map((endpoint) => this.map(endpoint));
  }

  async get(source: string, id: string): Promise<WebhookEndpointResponseDto> {
    return this.map(await this.find(this.db, source, id));
  }

  async update(source: string, id: string, dto: UpdateWebhookEndpointDto): Promise<WebhookEndpointResponseDto> {
    if (dto.url !== undefined) await checkEndpointUrl(dto.url, this.config.OUTBOUND_WEBHOOKS_ALLOW_PRIVATE);
    const endpoint = await this.find(this.db, source, id);
    if (dto.url !== undefined) endpoint.url = dto.url;
    if (dto.description !== undefined) endpoint.description = dto.description;
    if (dto.eventTypes !== undefined) endpoint.eventTypes = dto.eventTypes;
    if (dto.enabled === false) {
      endpoint.enabled = false;
      endpoint.disabledReason = 'client';
    }
    const resumed = dto.enabled === true && !endpoint.enabled;
    if (dto.enabled === true) {
      // A fresh start: the five days of failures that may have disabled it count from now again.
      Object.assign(endpoint, { enabled: true, disabledReason: null, failingSince: null });
    }
    const saved = await this.db.manager.save(endpoint);
    if (resumed) this.worker.announce();
    return this.map(saved);
  }

  /**
   * Its deliveries and their attempts go with it; an attempt in flight finds nothing to record. Under the
   * source's lock, which every create that enqueues deliveries for the source holds shared until it
   * commits: the delete waits for those, so it sees their deliveries, and creates after it see no endpoint.
   */
  async remove(source: string, id: string): Promise<void> {
    const removed =
      isUuid(id) &&
      (await this.db.run(async (tx) => {
        await lockEndpoints(tx, source);
        const [endpoints] = await tx.manager.query('DELETE FROM webhook_endpoints WHERE id = $1 AND source = $2 RETURNING id', [id, source]);
        if (endpoints.length === 0) return false;
        await tx.manager.query('DELETE FROM outbound_deliveries WHERE endpoint_id = $1', [id]);
        return true;
      }));
    if (!removed) throw this.notFound();
  }

  /** The old secret keeps signing, beside the new one, for OUTBOUND_WEBHOOKS_SECRET_GRACE_SECONDS. */
  async rotateSecret(tx: Transaction, source: string, id: string): Promise<WebhookEndpointWithSecretDto> {
    if (!isUuid(id)) throw this.notFound();
    const [rows] = await tx.manager.query(
      `UPDATE webhook_endpoints
          SET previous_secret = secret, secret = $3, previous_secret_expires_at = now() + make_interval(secs => $4), updated_at = now()
        WHERE id = $1 AND source = $2
       RETURNING id`,
      [id, source, generateSecret(), this.config.OUTBOUND_WEBHOOKS_SECRET_GRACE_SECONDS],
    );
    if (rows.length === 0) throw this.notFound();
    const endpoint = await this.find(tx, source, id);
    return { ...this.map(endpoint), secret: endpoint.secret };
  }

  async listForAdmin(source: string | undefined): Promise<AdminWebhookEndpointDto[]> {
    const endpoints = await this.db.manager.find(WebhookEndpointEntity, { where: source ? { source } : {}, order: { createdAt: 'DESC' }, take: 500 });
    return endpoints.map((endpoint) => ({ source: endpoint.source, ...this.map(endpoint) }));
  }

  /** Another source's endpoint, an unknown id and a non-UUID are all the same 404. */
  async find(db: Db, source: string, id: string): Promise<WebhookEndpointEntity> {
    const endpoint = isUuid(id) ? await db.manager.findOneBy(WebhookEndpointEntity, { id, source }) : null;
    if (!endpoint) throw this.notFound();
    return endpoint;
  }

  private notFound(): AppError {
    return new AppError('NOT_FOUND', 'No such webhook endpoint');
  }

  private map(endpoint: WebhookEndpointEntity): WebhookEndpointResponseDto {
    return {
      id: endpoint.id,
      url: endpoint.url,
      description: endpoint.description,
      eventTypes: endpoint.eventTypes,
      enabled: endpoint.enabled,
      disabledReason: endpoint.disabledReason,
      createdAt: endpoint.createdAt.toISOString(),
      updatedAt: endpoint.updatedAt.toISOString(),
    };
  }
}

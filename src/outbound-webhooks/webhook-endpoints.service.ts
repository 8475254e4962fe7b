import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { decodeKeysetCursor, encodeKeysetCursor, pageOf } from '../common/cursor';
import { isUuid } from '../common/validation';
import { AppConfig } from '../config/app-config';
import { Database, Queryable, Transaction } from '../database/database';
import { DeliveryWorker } from './delivery-worker';
import { AdminWebhookEndpointDto, CreateWebhookEndpointDto, UpdateWebhookEndpointDto, WebhookEndpointResponseDto, WebhookEndpointWithSecretDto } from './dto/webhook-endpoint.dto';
import { checkEndpointUrl } from './endpoint-url';
import { generateSecret } from './signing';
import { OUTBOUND_EVENT_TYPES } from './webhook-endpoint.entity';
import { EndpointRow, WebhookEndpointsRepository } from './webhook-endpoints.repository';

export const MAX_ENDPOINTS_PER_SOURCE = 10;

@Injectable()
export class WebhookEndpointsService implements OnModuleInit {
  constructor(
    private readonly db: Database,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly worker: DeliveryWorker,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    if (this.config.OUTBOUND_WEBHOOKS_ALLOW_PRIVATE) {
      new Logger('WebhookEndpoints').warn(
        'OUTBOUND_WEBHOOKS_ALLOW_PRIVATE is true: push endpoints may be http:// URLs and loopback, private or link-local addresses (cloud metadata services included); for local trials only',
      );
    }
  }

  /** Runs in the idempotency transaction, so a replay of the POST returns this same secret. */
  async create(tx: Transaction, source: string, dto: CreateWebhookEndpointDto): Promise<WebhookEndpointWithSecretDto> {
    const url = await checkEndpointUrl(dto.url, this.config.OUTBOUND_WEBHOOKS_ALLOW_PRIVATE);
    // Counted under the source's lock, so parallel creations cannot pass the limit together.
    await this.endpoints.lockSource(tx, source);
    if ((await this.endpoints.count(tx, source)) >= MAX_ENDPOINTS_PER_SOURCE) {
      throw new AppError('VALIDATION_ERROR', `A source can register at most ${MAX_ENDPOINTS_PER_SOURCE} webhook endpoints`, [
        { field: 'url', message: `this source already has ${MAX_ENDPOINTS_PER_SOURCE} endpoints; delete one first` },
      ]);
    }
    const endpoint = await this.endpoints.insert(tx, {
      source,
      url,
      description: dto.description ?? null,
      eventTypes: dto.eventTypes ?? [...OUTBOUND_EVENT_TYPES],
      secret: generateSecret(),
    });
    return { ...toEndpointResponse(endpoint), secret: endpoint.secret };
  }

  async list(source: string): Promise<WebhookEndpointResponseDto[]> {
    return (await this.endpoints.list(source)).map(toEndpointResponse);
  }

  async get(source: string, id: string): Promise<WebhookEndpointResponseDto> {
    return toEndpointResponse(await this.find(this.db, source, id));
  }

  async update(source: string, id: string, dto: UpdateWebhookEndpointDto): Promise<WebhookEndpointResponseDto> {
    const url = dto.url === undefined ? undefined : await checkEndpointUrl(dto.url, this.config.OUTBOUND_WEBHOOKS_ALLOW_PRIVATE);
    const updated = isUuid(id) ? await this.endpoints.update(source, id, { ...dto, url, disabledReason: 'client' }) : null;
    if (!updated) {
      // Only the operator who stopped an endpoint turns it back on; a client that could would make the stop pointless.
      if ((await this.find(this.db, source, id)).disabledReason === 'admin') {
        throw new AppError('INVALID_STATE_TRANSITION', 'The gateway operator disabled this endpoint; only they can enable it again');
      }
      throw notFound();
    }
    // Deliveries that waited while it was disabled are due again.
    if (updated.enabled && updated.wasDisabled) this.worker.announce();
    return toEndpointResponse(updated);
  }

  /**
   * Its deliveries and their attempts go with it; an attempt in flight finds nothing to record. Under the
   * source's lock, which every create that enqueues deliveries for the source holds shared until it
   * commits: the delete waits for those, so it sees their deliveries, and creates after it see no endpoint.
   */
  async remove(source: string, id: string): Promise<void> {
    if (!isUuid(id) || !(await this.endpoints.delete(source, id))) throw notFound();
  }

  /** The old secret keeps signing, beside the new one, for OUTBOUND_WEBHOOKS_SECRET_GRACE_SECONDS. */
  async rotateSecret(tx: Transaction, source: string, id: string): Promise<WebhookEndpointWithSecretDto> {
    const rotated = isUuid(id) ? await this.endpoints.rotateSecret(tx, source, id, generateSecret(), this.config.OUTBOUND_WEBHOOKS_SECRET_GRACE_SECONDS) : null;
    if (!rotated) throw notFound();
    return { ...toEndpointResponse(rotated), secret: rotated.secret };
  }

  async pageForAdmin(filter: { source?: string; cursor?: string }, limit: number): Promise<{ data: AdminWebhookEndpointDto[]; nextCursor: string | null }> {
    const rows = await this.endpoints.pageForAdmin(filter.source, filter.cursor ? decodeKeysetCursor('w', filter.cursor, 'cursor') : null, limit + 1);
    const page = pageOf(rows, limit, (last) => encodeKeysetCursor('w', last.position, last.id));
    return { data: page.rows.map((endpoint) => ({ source: endpoint.source, ...toEndpointResponse(endpoint) })), nextCursor: page.nextCursor };
  }

  /**
   * An administrator stops a client's misbehaving endpoint (disabledReason "admin") or turns it back on, in
   * `tx`, where the caller records who did it.
   */
  async setEnabledByAdmin(tx: Transaction, id: string, enabled: boolean): Promise<AdminWebhookEndpointDto> {
    const endpoint = isUuid(id) ? await this.endpoints.setEnabled(tx, id, enabled) : null;
    if (!endpoint) throw notFound();
    if (endpoint.enabled && endpoint.wasDisabled) tx.afterCommit(() => this.worker.announce());
    return { source: endpoint.source, ...toEndpointResponse(endpoint) };
  }

  /** Another source's endpoint, an unknown id and a non-UUID are all the same 404. */
  async find(db: Queryable, source: string, id: string): Promise<EndpointRow> {
    const endpoint = isUuid(id) ? await this.endpoints.find(db, source, id) : null;
    if (!endpoint) throw notFound();
    return endpoint;
  }
}

const notFound = () => new AppError('NOT_FOUND', 'No such webhook endpoint');

function toEndpointResponse(endpoint: EndpointRow): WebhookEndpointResponseDto {
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

import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import { decodeKeysetCursor, encodeKeysetCursor, pageOf } from '../common/cursor.js';
import { isUuid } from '../common/validation.js';
import { AppConfig } from '../config/app-config.js';
import { EntityManager } from 'typeorm';
import { afterCommit } from '../database/after-commit.js';
import { Transaction, Transactions } from '../database/transaction.js';
import { DeliveryWorker } from './delivery-worker.js';
import {
  AdminWebhookEndpointDto,
  CreateWebhookEndpointDto,
  UpdateWebhookEndpointDto,
  WebhookEndpointResponseDto,
  WebhookEndpointWithSecretDto,
} from './dto/webhook-endpoint.dto.js';
import { checkEndpointUrl, sameReceiverAs } from './endpoint-url.js';
import { generateSecret } from './signing.js';
import { OutboundDeliveriesRepository } from './outbound-deliveries.repository.js';
import { OUTBOUND_EVENT_TYPES, WebhookEndpointEntity } from './webhook-endpoint.entity.js';
import { EndpointChange, WebhookEndpointsRepository } from './webhook-endpoints.repository.js';

export const MAX_ENDPOINTS_PER_SOURCE = 10;

@Injectable()
export class WebhookEndpointsService implements OnModuleInit {
  constructor(
    private readonly transactions: Transactions,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly deliveries: OutboundDeliveriesRepository,
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

  /** Runs in the request's transaction (through TypeORM), so a replay of the POST returns this same secret. */
  async create(request: Transaction, source: string, dto: CreateWebhookEndpointDto): Promise<WebhookEndpointWithSecretDto> {
    const url = await checkEndpointUrl(dto.url, this.config.OUTBOUND_WEBHOOKS_ALLOW_PRIVATE);
    const tx = await request.manager();
    // Counted under the source's lock, so parallel creations cannot pass the limit together.
    await this.endpoints.lockSource(tx, source);
    if (await this.isStoppedByAdmin(tx, source, url)) throw stoppedUrl();
    if ((await this.endpoints.count(tx, source)) >= MAX_ENDPOINTS_PER_SOURCE) {
      throw new AppError('VALIDATION_ERROR', `A source can register at most ${MAX_ENDPOINTS_PER_SOURCE} webhook endpoints`, [
        { field: 'url', message: `this source already has ${MAX_ENDPOINTS_PER_SOURCE} endpoints; delete one first` },
      ]);
    }
    const secret = generateSecret();
    const endpoint = await this.endpoints.insert(tx, {
      source,
      url,
      description: dto.description ?? null,
      eventTypes: dto.eventTypes ?? [...OUTBOUND_EVENT_TYPES],
      secret,
    });
    return { ...toEndpointResponse(endpoint), secret };
  }

  async list(source: string): Promise<WebhookEndpointResponseDto[]> {
    return (await this.endpoints.list(source)).map(toEndpointResponse);
  }

  async get(source: string, id: string): Promise<WebhookEndpointResponseDto> {
    return toEndpointResponse(await this.find(source, id));
  }

  /**
   * Under the endpoint's row lock, so the operator's stop (disabledReason "admin") cannot change between
   * the check and the write: only the operator who stopped an endpoint turns it back on.
   */
  async update(source: string, id: string, dto: UpdateWebhookEndpointDto): Promise<WebhookEndpointResponseDto> {
    const url = dto.url === undefined ? undefined : await checkEndpointUrl(dto.url, this.config.OUTBOUND_WEBHOOKS_ALLOW_PRIVATE);
    if (!isUuid(id)) throw notFound();
    const updated = await this.transactions.managed(async (tx) => {
      // A new URL is checked against the operator's stops under the source's lock, as a create is.
      if (url !== undefined) await this.endpoints.lockSource(tx, source);
      const endpoint = await this.endpoints.findForUpdate(tx, id, source);
      if (!endpoint) throw notFound();
      if (dto.enabled !== undefined && endpoint.disabledReason === 'admin') {
        throw new AppError('INVALID_STATE_TRANSITION', 'The gateway operator disabled this endpoint; only they can enable it again');
      }
      const moved = url !== undefined && (await sameReceiverAs(url, [endpoint])).length === 0;
      if (moved && (endpoint.disabledReason === 'admin' || (await this.isStoppedByAdmin(tx, source, url)))) {
        throw stoppedUrl();
      }
      const changed = await this.endpoints.update(tx, id, {
        url,
        description: dto.description,
        eventTypes: dto.eventTypes,
        ...switched(dto.enabled, 'client'),
      });
      // Deliveries that waited while it was disabled are due again.
      if (changed.enabled && !endpoint.enabled) afterCommit(tx, () => this.worker.announce());
      return changed;
    });
    return toEndpointResponse(updated);
  }

  /**
   * Its deliveries and their attempts go with it; an attempt in flight finds nothing to record. Under the
   * source's lock, which every create that enqueues deliveries for the source holds shared until it
   * commits: the delete waits for those, so it sees their deliveries, and creates after it see no endpoint.
   */
  async remove(source: string, id: string): Promise<void> {
    const deleted =
      isUuid(id) &&
      (await this.transactions.managed(async (tx) => {
        await this.endpoints.lockSource(tx, source);
        // The operator's stop holds for the source and URL: deleting it would let the client register the URL anew.
        if ((await this.endpoints.findForUpdate(tx, id, source))?.disabledReason === 'admin') throw stoppedUrl();
        if (!(await this.endpoints.delete(tx, source, id))) return false;
        await this.deliveries.deleteOfEndpoint(tx, id);
        return true;
      }));
    if (!deleted) throw notFound();
  }

  /** The old secret keeps signing, beside the new one, for OUTBOUND_WEBHOOKS_SECRET_GRACE_SECONDS. */
  async rotateSecret(request: Transaction, source: string, id: string): Promise<WebhookEndpointWithSecretDto> {
    const secret = generateSecret();
    const rotated = isUuid(id)
      ? await this.endpoints.rotateSecret(await request.manager(), source, id, secret, this.config.OUTBOUND_WEBHOOKS_SECRET_GRACE_SECONDS)
      : null;
    if (!rotated) throw notFound();
    return { ...toEndpointResponse(rotated), secret };
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
  async setEnabledByAdmin(tx: EntityManager, id: string, enabled: boolean): Promise<AdminWebhookEndpointDto> {
    const found = isUuid(id) ? await this.endpoints.findById(id, tx) : null;
    if (!found) throw notFound();
    // The source's lock first, as a client's create or move takes it, then the row: no copy of the URL can
    // be registered or moved in between. The stop (and lifting it) holds for every endpoint of the source at
    // that URL, so one registered twice beforehand does not keep receiving.
    await this.endpoints.lockSource(tx, found.source);
    const endpoint = await this.endpoints.findForUpdate(tx, id);
    if (!endpoint) throw notFound();
    // Stopping reaches every endpoint at the URL; lifting, only those an administrator stopped (a client's own pause stays).
    const atUrl = await sameReceiverAs(endpoint.url, await this.endpoints.urlsOf(tx, endpoint.source, enabled));
    await this.endpoints.switchAll(
      tx,
      atUrl.map((at) => at.id),
      switched(enabled, 'admin'),
    );
    // This one is switched whatever stopped it (an administrator may enable a client's paused endpoint), and read back.
    const changed = await this.endpoints.update(tx, id, enabled ? switched(true, 'admin') : {});
    if (changed.enabled && !endpoint.enabled) afterCommit(tx, () => this.worker.announce());
    return { source: changed.source, ...toEndpointResponse(changed) };
  }

  /** Whether an administrator stopped an endpoint of `source` at `url` or another spelling of it; the caller holds the source's lock. */
  private async isStoppedByAdmin(tx: EntityManager, source: string, url: string): Promise<boolean> {
    return (await sameReceiverAs(url, await this.endpoints.urlsOf(tx, source, true))).length > 0;
  }

  /** Another source's endpoint, an unknown id and a non-UUID are all the same 404. */
  async find(source: string, id: string, tx?: EntityManager): Promise<WebhookEndpointEntity> {
    const endpoint = isUuid(id) ? await this.endpoints.find(source, id, tx) : null;
    if (!endpoint) throw notFound();
    return endpoint;
  }
}

const notFound = () => new AppError('NOT_FOUND', 'No such webhook endpoint');
/** A client's attempt to get round an operator's stop: deleting the stopped endpoint, moving it, or registering its URL again. */
const stoppedUrl = () =>
  new AppError(
    'INVALID_STATE_TRANSITION',
    'The gateway operator stopped pushes to this URL for this source; only they can lift the stop, so it cannot be deleted, moved or registered again until then',
  );

/**
 * Switching an endpoint on or off (undefined: neither): off records `reason`; on clears it and starts
 * afresh, the five days of failures that may have disabled it counted from now again.
 */
function switched(enabled: boolean | undefined, reason: 'client' | 'admin'): Pick<EndpointChange, 'enabled' | 'disabledReason' | 'failingSince'> {
  if (enabled === undefined) return {};
  return enabled ? { enabled, disabledReason: null, failingSince: null } : { enabled, disabledReason: reason };
}

function toEndpointResponse(endpoint: WebhookEndpointEntity): WebhookEndpointResponseDto {
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

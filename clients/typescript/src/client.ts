import createClient, { type Client } from 'openapi-fetch';
import { Archive, ArchiveOptions } from './archive';
import { Documents } from './documents';
import { Events } from './events';
import type { paths } from './generated/openapi';
import { DEFAULT_RETRY_POLICY, RetryPolicy } from './retry';
import { CallOptions, RetryEvent, Transport } from './transport';
import type { Me } from './types';
import { WebhookEndpoints } from './webhook-endpoints';
import { webhooks } from './webhooks';

export interface GatewayClientOptions {
  /** The gateway's origin, e.g. `https://tax-gateway.example.com` (no `/api/v1`). */
  baseUrl: string;
  /** `sk_tax_…`: the key of one source, sent as `X-API-Key`. */
  apiKey: string;
  /** Time limit of each attempt, answer body included. Default 30 s. */
  timeoutMs?: number;
  /** When and how often to retry (see README, *Retries*). Defaults: `DEFAULT_RETRY_POLICY`. */
  retry?: Partial<RetryPolicy>;
  /** Told before each wait for another attempt, e.g. to log it. */
  onRetry?: (event: RetryEvent) => void;
  /** A fetch of your own (a proxy agent, instrumentation). Default: the global fetch. */
  fetch?: (request: Request) => Promise<Response>;
  /** The archive's pinned verifier key and where to keep the newest checkpoint: needed by `archive`. */
  archive?: ArchiveOptions;
}

/**
 * The gateway's API for one source. Every call retries what is safe to retry (no answer, a busy
 * idempotency key, 429, 502, 503, 504) and every POST carries one idempotency key across its retries.
 */
export class GatewayClient {
  readonly documents: Documents;
  readonly events: Events;
  readonly webhookEndpoints: WebhookEndpoints;
  /** The verifiable archive, checked on this side; `null` without the `archive` option (its verifier key). */
  readonly archive: Archive | null;
  /** `webhooks.verify(headers, rawBody, secret)`, also exported on its own for receivers that hold no API key. */
  readonly webhooks = webhooks;
  /** The generated openapi-fetch client, for what this layer does not wrap. Its calls are sent once: no retries, no idempotency key made for you. */
  readonly raw: Client<paths>;
  private readonly transport: Transport;

  constructor(options: GatewayClientOptions) {
    this.raw = createClient<paths>({ baseUrl: options.baseUrl, fetch: options.fetch, headers: { 'X-API-Key': options.apiKey } });
    this.transport = new Transport(this.raw, {
      timeoutMs: options.timeoutMs ?? 30_000,
      retry: { ...DEFAULT_RETRY_POLICY, ...options.retry },
      onRetry: options.onRetry,
    });
    this.documents = new Documents(this.transport);
    this.events = new Events(this.transport);
    this.webhookEndpoints = new WebhookEndpoints(this.transport);
    this.archive = options.archive ? new Archive(this.transport, this.events, options.archive) : null;
  }

  /** The key's source, id, prefix and expiry: a quick check that the key works. */
  async me(options?: CallOptions): Promise<Me> {
    const { data } = await this.transport.send({ method: 'GET', path: '/api/v1/me' }, (signal) => this.raw.GET('/api/v1/me', { signal }), options);
    return data;
  }
}

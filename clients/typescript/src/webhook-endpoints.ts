import { GatewayProblemError } from './errors';
import { IdempotentCallOptions, newIdempotencyKey } from './idempotency';
import type { CallOptions, Transport } from './transport';
import type { CreateWebhookEndpointInput, UpdateWebhookEndpointInput, WebhookEndpoint, WebhookEndpointWithSecret } from './types';

/** The source's push endpoints (`/api/v1/webhook-endpoints`). */
export class WebhookEndpoints {
  constructor(private readonly transport: Transport) {}

  /**
   * Registers an endpoint; the answer carries its signing `secret`, shown here only (and by
   * `rotateSecret`): keep it. A retry after a lost answer gets the same secret back, from the
   * gateway's stored answer.
   */
  async create(body: CreateWebhookEndpointInput, options: IdempotentCallOptions = {}): Promise<WebhookEndpointWithSecret> {
    const idempotencyKey = options.idempotencyKey ?? newIdempotencyKey();
    const { data } = await this.transport.send(
      { method: 'POST', path: '/api/v1/webhook-endpoints' },
      (signal) => this.transport.api.POST('/api/v1/webhook-endpoints', { params: { header: { 'X-Idempotency-Key': idempotencyKey } }, body, signal }),
      options,
    );
    return data;
  }

  async list(options?: CallOptions): Promise<WebhookEndpoint[]> {
    const { data } = await this.transport.send(
      { method: 'GET', path: '/api/v1/webhook-endpoints' },
      (signal) => this.transport.api.GET('/api/v1/webhook-endpoints', { signal }),
      options,
    );
    return data.data;
  }

  async get(id: string, options?: CallOptions): Promise<WebhookEndpoint> {
    const { data } = await this.transport.send(
      { method: 'GET', path: '/api/v1/webhook-endpoints/{id}' },
      (signal) => this.transport.api.GET('/api/v1/webhook-endpoints/{id}', { params: { path: { id } }, signal }),
      options,
    );
    return data;
  }

  /** Changes the given fields; sending the same change again changes nothing more, so it is retried like a read. */
  async update(id: string, body: UpdateWebhookEndpointInput, options?: CallOptions): Promise<WebhookEndpoint> {
    const { data } = await this.transport.send(
      { method: 'PATCH', path: '/api/v1/webhook-endpoints/{id}' },
      (signal) => this.transport.api.PATCH('/api/v1/webhook-endpoints/{id}', { params: { path: { id } }, body, signal }),
      options,
    );
    return data;
  }

  /**
   * Deletes the endpoint and its pending deliveries. A retry that finds it gone counts as done: an
   * earlier attempt whose answer was lost may have deleted it.
   */
  async delete(id: string, options?: CallOptions): Promise<void> {
    try {
      await this.transport.send(
        { method: 'DELETE', path: '/api/v1/webhook-endpoints/{id}' },
        (signal) => this.transport.api.DELETE('/api/v1/webhook-endpoints/{id}', { params: { path: { id } }, signal }),
        options,
      );
    } catch (error) {
      if (error instanceof GatewayProblemError && error.code === 'NOT_FOUND' && error.attempts > 1) return;
      throw error;
    }
  }

  /** A new signing secret; for the gateway's grace period deliveries are signed with the previous one too. */
  async rotateSecret(id: string, options: IdempotentCallOptions = {}): Promise<WebhookEndpointWithSecret> {
    const idempotencyKey = options.idempotencyKey ?? newIdempotencyKey();
    const { data } = await this.transport.send(
      { method: 'POST', path: '/api/v1/webhook-endpoints/{id}/rotate-secret' },
      (signal) =>
        this.transport.api.POST('/api/v1/webhook-endpoints/{id}/rotate-secret', {
          params: { path: { id }, header: { 'X-Idempotency-Key': idempotencyKey } },
          signal,
        }),
      options,
    );
    return data;
  }
}

import { IdempotentCallOptions, newIdempotencyKey } from './idempotency';
import type { CallOptions, Transport } from './transport';
import type { CreateDocumentInput, ListDocumentsQuery, TaxDocument } from './types';

export class Documents {
  constructor(private readonly transport: Transport) {}

  /**
   * Submits a document (201). Every retry sends the same idempotency key, so however often the
   * answer is lost, the gateway creates it once and answers each retry with the original answer.
   */
  async create(body: CreateDocumentInput, options: IdempotentCallOptions = {}): Promise<TaxDocument> {
    const idempotencyKey = options.idempotencyKey ?? newIdempotencyKey();
    const { data } = await this.transport.send(
      { method: 'POST', path: '/api/v1/documents' },
      (signal) => this.transport.api.POST('/api/v1/documents', { params: { header: { 'X-Idempotency-Key': idempotencyKey } }, body, signal }),
      options,
    );
    return data;
  }

  /** One of the source's documents; another source's or an unknown id is a `NOT_FOUND` problem. */
  async get(id: string, options?: CallOptions): Promise<TaxDocument> {
    const { data } = await this.transport.send(
      { method: 'GET', path: '/api/v1/documents/{id}' },
      (signal) => this.transport.api.GET('/api/v1/documents/{id}', { params: { path: { id } }, signal }),
      options,
    );
    return data;
  }

  /** Every matching document, newest first, fetched a page (`limit`, 20 by default) at a time as you iterate. */
  async *list(query: ListDocumentsQuery = {}, options?: CallOptions): AsyncGenerator<TaxDocument, void, undefined> {
    let cursor: string | undefined;
    do {
      const { data: page } = await this.transport.send(
        { method: 'GET', path: '/api/v1/documents' },
        (signal) => this.transport.api.GET('/api/v1/documents', { params: { query: { ...query, cursor } }, signal }),
        options,
      );
      yield* page.data;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  /** Cancels a document (200 with it); `INVALID_STATE_TRANSITION` when it can no longer be cancelled. */
  async cancel(id: string, options: IdempotentCallOptions = {}): Promise<TaxDocument> {
    const idempotencyKey = options.idempotencyKey ?? newIdempotencyKey();
    const { data } = await this.transport.send(
      { method: 'POST', path: '/api/v1/documents/{id}/cancel' },
      (signal) =>
        this.transport.api.POST('/api/v1/documents/{id}/cancel', { params: { path: { id }, header: { 'X-Idempotency-Key': idempotencyKey } }, signal }),
      options,
    );
    return data;
  }
}

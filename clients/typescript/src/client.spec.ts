import { runInNewContext } from 'node:vm';
import { GatewayClient, GatewayClientOptions } from './client';
import { GatewayNetworkError, GatewayProblemError, GatewayTimeoutError } from './errors';
import type { RetryEvent } from './transport';
import type { CreateDocumentInput, DocumentEvent } from './types';

/** What the fake gateway answers to each request in turn: an answer, a thrown error, or no answer until aborted. */
type Step = Response | Error | 'hang';

interface SentRequest {
  method: string;
  path: string;
  headers: Headers;
  body: string;
}

function scriptedFetch(steps: Step[]) {
  const requests: SentRequest[] = [];
  const fetch = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    requests.push({ method: request.method, path: url.pathname + url.search, headers: request.headers, body: await request.clone().text() });
    const step = steps[requests.length - 1];
    if (step === undefined) throw new Error(`unexpected request ${requests.length}: ${request.method} ${request.url}`);
    if (step === 'hang') return new Promise((_, reject) => request.signal.addEventListener('abort', () => reject(request.signal.reason as Error)));
    if (!(step instanceof Response)) throw step;
    return step;
  };
  return { fetch, requests };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

const problem = (status: number, code: string, headers: Record<string, string> = {}, extra: Record<string, unknown> = {}) =>
  new Response(
    JSON.stringify({
      type: 'about:blank',
      title: 'Title',
      status,
      code,
      detail: `detail of ${code}`,
      instance: '/api/v1/documents',
      requestId: `req-${code}`,
      ...extra,
    }),
    {
      status,
      headers: { 'content-type': 'application/problem+json', 'x-request-id': 'header-id', ...headers },
    },
  );

/** What undici's fetch throws when the connection fails. */
const connectionReset = () => new TypeError('fetch failed', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) });

const body: CreateDocumentInput = {
  source: 'acme-erp',
  externalId: 'INV-1',
  type: 'INVOICE',
  taxpayer: { taxId: 'DE123', name: 'Muster GmbH', country: 'DE' },
  issueDate: '2026-11-20',
  currency: 'EUR',
  totalAmount: '119.00',
  taxAmount: '19.00',
};
const created = { id: '2b0f4c1e-0000-4000-8000-000000000001', ...body, status: 'PENDING_PAYMENT' };

function clientWith(steps: Step[], options: Partial<GatewayClientOptions> = {}) {
  const { fetch, requests } = scriptedFetch(steps);
  const retries: RetryEvent[] = [];
  const client = new GatewayClient({
    baseUrl: 'http://gateway.test',
    apiKey: 'sk_tax_test',
    fetch,
    retry: { baseDelayMs: 1, maxDelayMs: 5 },
    onRetry: (event) => retries.push(event),
    ...options,
  });
  return { client, requests, retries };
}

const idempotencyKeys = (requests: SentRequest[]) => requests.map((request) => request.headers.get('x-idempotency-key'));

describe('GatewayClient', () => {
  describe('documents.create', () => {
    it('makes one idempotency key and sends it on every retry until the gateway answers', async () => {
      const { client, requests, retries } = clientWith([
        connectionReset(),
        problem(503, 'SERVICE_UNAVAILABLE', { 'retry-after': '0' }),
        problem(409, 'IDEMPOTENCY_KEY_IN_USE', { 'retry-after': '0' }),
        problem(429, 'RATE_LIMITED', { 'retry-after': '0' }),
        json(201, created, { 'idempotent-replayed': 'true' }),
      ]);
      await expect(client.documents.create(body)).resolves.toEqual(created);
      const keys = idempotencyKeys(requests);
      expect(keys[0]).toMatch(/^[a-zA-Z0-9._:-]{8,128}$/);
      expect(new Set(keys)).toEqual(new Set([keys[0]]));
      expect(
        requests.every((request) => request.method === 'POST' && request.path === '/api/v1/documents' && JSON.parse(request.body).externalId === 'INV-1'),
      ).toBe(true);
      expect(requests[0].headers.get('x-api-key')).toBe('sk_tax_test');
      expect(retries.map((retry) => [retry.attempt, retry.error.constructor.name, (retry.error as GatewayProblemError).status])).toEqual([
        [1, 'GatewayNetworkError', undefined],
        [2, 'GatewayProblemError', 503],
        [3, 'GatewayProblemError', 409],
        [4, 'GatewayProblemError', 429],
      ]);
    });

    it('uses the idempotency key it is given, and a new one for each call without', async () => {
      const { client, requests } = clientWith([json(201, created), json(201, created), json(201, created)]);
      await client.documents.create(body, { idempotencyKey: 'acme-inv-2026-0001' });
      await client.documents.create(body);
      await client.documents.create(body);
      const keys = idempotencyKeys(requests);
      expect(keys[0]).toBe('acme-inv-2026-0001');
      expect(keys[1]).not.toBe(keys[2]);
    });

    it('waits as long as Retry-After says', async () => {
      const { client, retries } = clientWith([problem(503, 'SERVICE_UNAVAILABLE', { 'retry-after': '1' }), json(201, created)]);
      const started = Date.now();
      await client.documents.create(body);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
      expect(retries.map((retry) => retry.delayMs)).toEqual([1000]);
    });

    it.each([
      ['a validation failure', 422, 'VALIDATION_ERROR'],
      ['a reused idempotency key', 422, 'IDEMPOTENCY_KEY_REUSED'],
      ['a duplicate document', 409, 'DUPLICATE_DOCUMENT'],
      ['a bad API key', 401, 'UNAUTHORIZED'],
      ['an internal error', 500, 'INTERNAL_ERROR'],
    ])('does not retry %s (%i %s) and surfaces its problem+json', async (_case, status, code) => {
      const errors = [{ field: 'taxpayer.country', message: 'must be an ISO 3166-1 alpha-2 country code in upper case' }];
      const { client, requests } = clientWith([problem(status, code, {}, code === 'VALIDATION_ERROR' ? { errors } : {})]);
      const error = await client.documents.create(body).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(GatewayProblemError);
      expect(error).toMatchObject({ status, code, detail: `detail of ${code}`, requestId: `req-${code}`, attempts: 1, retryable: false });
      expect((error as GatewayProblemError).errors).toEqual(code === 'VALIDATION_ERROR' ? errors : []);
      expect((error as GatewayProblemError).problem).toMatchObject({ status, code });
      expect(requests).toHaveLength(1);
    });

    it('takes a failed fetch from another realm (as in a Jest or vm context) for the network error it is', async () => {
      const foreign = runInNewContext('new TypeError("fetch failed", { cause: { code: "ECONNREFUSED" } })') as Error;
      expect(foreign).not.toBeInstanceOf(TypeError);
      const { client, retries } = clientWith([foreign, json(201, created)]);
      await expect(client.documents.create(body)).resolves.toEqual(created);
      expect(retries[0].error).toBeInstanceOf(GatewayNetworkError);
      expect(retries[0].error.message).toContain('ECONNREFUSED');
    });

    it("does not retry an error that is not the network's doing", async () => {
      for (const bug of [new RangeError('a bug'), new TypeError("Cannot read properties of undefined (reading 'get')")]) {
        const { client, requests } = clientWith([bug]);
        await expect(client.documents.create(body)).rejects.toBe(bug);
        expect(requests).toHaveLength(1);
      }
    });

    it('gives up after maxAttempts with the last error and how many attempts were made', async () => {
      const { client, requests } = clientWith([connectionReset(), connectionReset(), connectionReset()], { retry: { maxAttempts: 3, baseDelayMs: 1 } });
      const error = await client.documents.create(body).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(GatewayNetworkError);
      expect(error).toMatchObject({ attempts: 3, message: expect.stringContaining('ECONNRESET') });
      expect(requests).toHaveLength(3);
    });

    it('does not start a wait that would end past maxElapsedMs', async () => {
      const { client, requests } = clientWith([problem(503, 'SERVICE_UNAVAILABLE', { 'retry-after': '30' })], { retry: { maxElapsedMs: 2000 } });
      const started = Date.now();
      await expect(client.documents.create(body)).rejects.toMatchObject({ status: 503, retryAfterMs: 30_000, attempts: 1 });
      expect(Date.now() - started).toBeLessThan(1000);
      expect(requests).toHaveLength(1);
    });

    it('ends an attempt that gets no answer within timeoutMs, and retries it', async () => {
      const { client, requests, retries } = clientWith(['hang', json(201, created)], { timeoutMs: 50 });
      await expect(client.documents.create(body)).resolves.toEqual(created);
      expect(retries[0].error).toBeInstanceOf(GatewayTimeoutError);
      expect(new Set(idempotencyKeys(requests)).size).toBe(1);
    });

    it('reports GatewayTimeoutError when every attempt times out', async () => {
      const { client } = clientWith(['hang', 'hang'], { timeoutMs: 30, retry: { maxAttempts: 2, baseDelayMs: 1 } });
      await expect(client.documents.create(body)).rejects.toEqual(expect.objectContaining({ name: 'GatewayTimeoutError', timeoutMs: 30, attempts: 2 }));
    });

    it("stops at once, with the signal's reason, when aborted during a wait or a request", async () => {
      const waiting = clientWith([problem(503, 'SERVICE_UNAVAILABLE', { 'retry-after': '30' })]);
      const duringWait = new AbortController();
      setTimeout(() => duringWait.abort(new Error('shutting down')), 50);
      const started = Date.now();
      await expect(waiting.client.documents.create(body, { signal: duringWait.signal })).rejects.toThrow('shutting down');
      expect(Date.now() - started).toBeLessThan(1000);

      const hanging = clientWith(['hang']);
      const duringRequest = new AbortController();
      setTimeout(() => duringRequest.abort(new Error('user gave up')), 50);
      await expect(hanging.client.documents.create(body, { signal: duringRequest.signal })).rejects.toThrow('user gave up');
      expect(hanging.requests).toHaveLength(1);
    });

    it('retries an error page from a proxy in between (502) and keeps its text when it gives up', async () => {
      const page = () => new Response('<html>Bad Gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } });
      const { client, requests } = clientWith([page(), page()], { retry: { maxAttempts: 2, baseDelayMs: 1 } });
      const error = await client.documents.create(body).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ status: 502, code: undefined, body: '<html>Bad Gateway</html>', requestId: undefined, attempts: 2 });
      expect(requests).toHaveLength(2);
    });
  });

  describe('documents.list', () => {
    it('iterates every page through nextCursor', async () => {
      const doc = (id: string) => ({ ...created, id });
      const { client, requests } = clientWith([json(200, { data: [doc('a'), doc('b')], nextCursor: 'c1' }), json(200, { data: [doc('c')], nextCursor: null })]);
      const ids: string[] = [];
      for await (const document of client.documents.list({ status: 'PENDING_PAYMENT', limit: 2 })) ids.push(document.id);
      expect(ids).toEqual(['a', 'b', 'c']);
      expect(requests.map((request) => request.path)).toEqual([
        '/api/v1/documents?status=PENDING_PAYMENT&limit=2',
        '/api/v1/documents?status=PENDING_PAYMENT&limit=2&cursor=c1',
      ]);
    });
  });

  describe('documents.cancel', () => {
    it('is a POST with an idempotency key kept across retries', async () => {
      const { client, requests } = clientWith([connectionReset(), json(200, { ...created, status: 'CANCELLED' })]);
      await expect(client.documents.cancel(created.id)).resolves.toMatchObject({ status: 'CANCELLED' });
      expect(requests.map((request) => `${request.method} ${request.path}`)).toEqual([
        `POST /api/v1/documents/${created.id}/cancel`,
        `POST /api/v1/documents/${created.id}/cancel`,
      ]);
      expect(new Set(idempotencyKeys(requests)).size).toBe(1);
      expect(idempotencyKeys(requests)[0]).toEqual(expect.any(String));
    });
  });

  describe('events', () => {
    const event = (id: string): DocumentEvent => ({
      id,
      type: 'document.created',
      documentId: created.id,
      status: 'PENDING_PAYMENT',
      previousStatus: null,
      createdAt: '2026-11-25T10:00:00.000Z',
    });

    it('list() reads every page from `after` until hasMore is false; cursor moves only past a finished page', async () => {
      const { client, requests } = clientWith([
        json(200, { data: [event('1'), event('2')], nextCursor: 'p1', hasMore: true }),
        json(200, { data: [event('3')], nextCursor: 'p2', hasMore: false }),
      ]);
      const log: string[] = [];
      const feed = client.events.list({ after: 'p0', limit: 2, onCursor: async (cursor) => void log.push(`stored ${cursor}`) });
      for await (const item of feed) {
        await new Promise((resolve) => setTimeout(resolve, 5)); // handling takes a while
        log.push(`handled ${item.id} at ${feed.cursor}`);
      }
      expect(log).toEqual(['handled 1 at p0', 'handled 2 at p0', 'stored p1', 'handled 3 at p1', 'stored p2']);
      expect(feed.cursor).toBe('p2');
      expect(requests.map((request) => request.path)).toEqual(['/api/v1/events?after=p0&limit=2', '/api/v1/events?after=p1&limit=2']);
    });

    it('list() keeps the cursor it has when a page brings none (a source without events)', async () => {
      const { client } = clientWith([json(200, { data: [], nextCursor: null, hasMore: false })]);
      const feed = client.events.list();
      for await (const item of feed) throw new Error(`unexpected ${item.id}`);
      expect(feed.cursor).toBeUndefined();
    });

    it('follow() polls on through empty answers and outages, yields each event once and ends quietly when aborted', async () => {
      const controller = new AbortController();
      const outage = () => problem(503, 'SERVICE_UNAVAILABLE', { 'retry-after': '0' });
      const { client, requests } = clientWith(
        [
          json(200, { data: [event('1')], nextCursor: 'p1', hasMore: false }),
          json(200, { data: [], nextCursor: 'p1', hasMore: false }),
          outage(),
          outage(),
          json(200, { data: [event('2'), event('3')], nextCursor: 'p2', hasMore: true }),
          json(200, { data: [event('4')], nextCursor: 'p3', hasMore: false }),
          'hang',
        ],
        { retry: { maxAttempts: 2, baseDelayMs: 1 } },
      );
      const failures: unknown[] = [];
      const stored: string[] = [];
      const feed = client.events.follow({
        signal: controller.signal,
        minIntervalMs: 5,
        maxIntervalMs: 20,
        onError: (error) => failures.push(error),
        onCursor: (cursor) => void stored.push(cursor),
      });
      const ids: string[] = [];
      for await (const item of feed) {
        ids.push(item.id);
        if (item.id === '4') setTimeout(() => controller.abort(), 20);
      }
      expect(ids).toEqual(['1', '2', '3', '4']);
      expect(feed.cursor).toBe('p3');
      // Once per move: not again for the empty answer that kept p1.
      expect(stored).toEqual(['p1', 'p2', 'p3']);
      expect(failures).toEqual([expect.objectContaining({ status: 503, attempts: 2 })]);
      expect(requests.map((request) => new URL(request.path, 'http://x').searchParams.get('after'))).toEqual([null, 'p1', 'p1', 'p1', 'p1', 'p2', 'p3']);
    });

    it('follow() stops yielding a page once aborted, leaving the cursor before it', async () => {
      const controller = new AbortController();
      const { client } = clientWith([json(200, { data: [event('1'), event('2')], nextCursor: 'p1', hasMore: false })]);
      const stored: string[] = [];
      const feed = client.events.follow({ after: 'p0', signal: controller.signal, onCursor: (cursor) => void stored.push(cursor) });
      const ids: string[] = [];
      for await (const item of feed) {
        ids.push(item.id);
        controller.abort();
      }
      expect(ids).toEqual(['1']);
      expect(feed.cursor).toBe('p0');
      expect(stored).toEqual([]);
    });

    it('follow() ends by rejecting on an error a retry cannot fix', async () => {
      const { client } = clientWith([problem(401, 'UNAUTHORIZED')]);
      const iterate = async () => {
        for await (const item of client.events.follow()) throw new Error(`unexpected ${item.id}`);
      };
      await expect(iterate()).rejects.toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    });
  });

  describe('webhookEndpoints.delete', () => {
    const id = '2b0f4c1e-0000-4000-8000-0000000000ee';

    it('counts a retry that finds the endpoint gone as done: the lost first attempt may have deleted it', async () => {
      const { client, requests } = clientWith([connectionReset(), problem(404, 'NOT_FOUND')]);
      await expect(client.webhookEndpoints.delete(id)).resolves.toBeUndefined();
      expect(requests.map((request) => request.method)).toEqual(['DELETE', 'DELETE']);
    });

    it('reports NOT_FOUND on a first attempt', async () => {
      const { client } = clientWith([problem(404, 'NOT_FOUND')]);
      await expect(client.webhookEndpoints.delete(id)).rejects.toMatchObject({ code: 'NOT_FOUND', attempts: 1 });
    });
  });
});

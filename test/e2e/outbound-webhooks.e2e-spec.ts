import { jest } from '@jest/globals';
import { Webhook } from 'standardwebhooks';
import { documentBody, feedOnceReady, IssuedKey, newIdempotencyKey, newSourceWithKey, postDocument, cancelDocument } from '../support/factories.js';
import { ENDPOINTS_LOCK_NAMESPACE } from '../../src/outbound-webhooks/webhook-endpoints.repository.js';
import { EventLoopLoad } from '../../src/outbound-webhooks/event-loop-load.js';
import { holdInsert } from '../support/database.js';
import { ClaimWatch, watchClaims } from '../support/delivery-claims.js';
import { waitFor } from '../support/processes.js';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from '../support/test-app.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

/** Short delays so retries happen within a test; everything else as in production. */
const ENV = {
  OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true',
  OUTBOUND_WEBHOOKS_RETRY_SCHEDULE: '1s,1s',
  OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS: '2',
  OUTBOUND_WEBHOOKS_LEASE_SECONDS: '10',
};

describe('push notifications', () => {
  let t: TestApp;
  let claims: ClaimWatch;
  const receivers: WebhookReceiver[] = [];

  const receiver = async (...args: ConstructorParameters<typeof WebhookReceiver>) => {
    const started = await new WebhookReceiver(...args).start();
    receivers.push(started);
    return started;
  };
  const api = (key: IssuedKey, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
    t.app.inject({
      method,
      url: `/api/v1/webhook-endpoints${url}`,
      headers: { 'x-api-key': key.key, ...(method === 'POST' ? { 'x-idempotency-key': newIdempotencyKey() } : {}) },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
  const register = async (key: IssuedKey, url: string, extra: Record<string, unknown> = {}) => {
    const res = await api(key, 'POST', '', { url, ...extra });
    expect(res.statusCode).toBe(201);
    return res.json<{ id: string; secret: string }>();
  };
  const createDocument = async (key: IssuedKey) => {
    const res = await postDocument(t.app, key.key, documentBody(key.source));
    expect(res.statusCode).toBe(201);
    return res.json<{ id: string }>();
  };
  const eventOf = (key: IssuedKey, documentId: string, type = 'document.created') =>
    feedOnceReady(t.app, key.key, (events) => events.find((e) => e.documentId === documentId && e.type === type), `the ${type} event in the feed`);
  const deliveries = async (key: IssuedKey, endpointId: string, query = '') => (await api(key, 'GET', `/${endpointId}/deliveries${query}`)).json();
  const deliveryOf = async (key: IssuedKey, endpointId: string, eventId: string) =>
    (await deliveries(key, endpointId)).data.find((d: { eventId: string }) => d.eventId === eventId);
  const settled = (key: IssuedKey, endpointId: string, eventId: string, status: string) =>
    waitFor(async () => {
      const delivery = await deliveryOf(key, endpointId, eventId);
      return delivery?.status === status && delivery;
    }, `delivery of event ${eventId} to become ${status}`);

  beforeAll(async () => {
    t = await startTestApp({ env: ENV });
    claims = watchClaims(t.app);
  });
  afterAll(async () => {
    claims.restore();
    await Promise.all(receivers.map((r) => r.stop()));
    await t.close();
  });

  describe('the endpoints API', () => {
    it('shows the whsec_ secret once, never in a GET, and replays the creation with the same secret', async () => {
      const source = await newSourceWithKey(t.app);
      const idempotencyKey = newIdempotencyKey();
      const post = () =>
        t.app.inject({
          method: 'POST',
          url: '/api/v1/webhook-endpoints',
          headers: { 'x-api-key': source.key, 'x-idempotency-key': idempotencyKey },
          payload: { url: 'https://hooks.example.com/tax', description: 'ERP', eventTypes: ['document.created'] },
        });
      const created = await post();
      expect(created.statusCode).toBe(201);
      const body = created.json();
      expect(body).toEqual({
        id: expect.any(String),
        url: 'https://hooks.example.com/tax',
        description: 'ERP',
        eventTypes: ['document.created'],
        enabled: true,
        disabledReason: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      });
      expect(created.headers['cache-control']).toBe('no-store');
      const replay = await post();
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.headers['cache-control']).toBe('no-store');
      expect(replay.json().secret).toBe(body.secret);

      const { secret, ...withoutSecret } = body;
      expect((await api(source, 'GET', `/${body.id}`)).json()).toEqual(withoutSecret);
      expect((await api(source, 'GET', '')).json()).toEqual({ data: [withoutSecret] });
      expect(JSON.stringify((await api(source, 'GET', '')).json())).not.toContain(secret);
    });

    it('defaults to every event type, patches each field, and deletes with 204', async () => {
      const source = await newSourceWithKey(t.app);
      const { id } = await register(source, 'https://hooks.example.com/a');
      expect((await api(source, 'GET', `/${id}`)).json().eventTypes).toEqual(['document.created', 'document.status_changed']);
      const patched = await api(source, 'PATCH', `/${id}`, {
        url: 'https://hooks.example.com/b',
        description: 'new',
        eventTypes: ['document.status_changed'],
        enabled: false,
      });
      expect(patched.statusCode).toBe(200);
      expect(patched.json()).toMatchObject({
        url: 'https://hooks.example.com/b',
        description: 'new',
        eventTypes: ['document.status_changed'],
        enabled: false,
        disabledReason: 'client',
      });
      expect((await api(source, 'PATCH', `/${id}`, { enabled: true, description: null })).json()).toMatchObject({
        enabled: true,
        disabledReason: null,
        description: null,
      });
      expect((await api(source, 'DELETE', `/${id}`)).statusCode).toBe(204);
      expect((await api(source, 'GET', `/${id}`)).statusCode).toBe(404);
      expect((await api(source, 'DELETE', `/${id}`)).statusCode).toBe(404);
    });

    it('refuses bad bodies with 422 naming each field, and changes nothing', async () => {
      const source = await newSourceWithKey(t.app);
      const res = await api(source, 'POST', '', { url: 'ftp://x.example.com', eventTypes: [], description: '', extra: 1 });
      expect(res.statusCode).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      // Every bad field at once, the URL's rules included.
      const byField = (errors: { field: string }[]) => [...errors].sort((a, b) => a.field.localeCompare(b.field));
      expect(byField(res.json().errors)).toEqual([
        { field: 'description', message: 'must be longer than or equal to 1 characters' },
        { field: 'eventTypes', message: expect.stringContaining('document.created') },
        { field: 'extra', message: 'is not an allowed field' },
        { field: 'url', message: expect.stringMatching(/^must be an https:\/\/ URL/) },
      ]);
      const badUrl = await api(source, 'POST', '', { url: 'ftp://x.example.com' });
      expect(badUrl.json()).toMatchObject({
        status: 422,
        code: 'VALIDATION_ERROR',
        errors: [{ field: 'url', message: expect.stringMatching(/^must be an https:\/\/ URL/) }],
      });
      const unknownType = await api(source, 'POST', '', { url: 'https://x.example.com', eventTypes: ['document.deleted'] });
      expect(unknownType.json().errors).toEqual([{ field: 'eventTypes', message: expect.stringContaining('document.created') }]);
      const both = await api(source, 'POST', '', { url: 'not a url', eventTypes: ['document.deleted'] });
      expect(both.json().errors).toEqual([
        { field: 'url', message: 'must be an absolute URL' },
        { field: 'eventTypes', message: expect.stringContaining('document.created') },
      ]);
      const patched = await api(source, 'POST', '', { url: 'https://x.example.com' });
      const badPatch = await api(source, 'PATCH', `/${patched.json().id}`, { url: 'https://user:pw@x.example.com/', eventTypes: [], enabled: 'yes' });
      expect(byField(badPatch.json().errors).map((e) => e.field)).toEqual(['enabled', 'eventTypes', 'url']);
      await api(source, 'DELETE', `/${patched.json().id}`);
      const credentials = await api(source, 'POST', '', { url: 'https://user:pw@x.example.com/' });
      expect(credentials.json().errors).toEqual([{ field: 'url', message: 'must not contain credentials' }]);
      const nulls = await api(source, 'POST', '', { url: 'https://x.example.com', eventTypes: null, description: null });
      expect(nulls.json().errors).toEqual([
        { field: 'description', message: 'must be left out rather than sent as null' },
        { field: 'eventTypes', message: 'must be left out rather than sent as null' },
      ]);
      const missing = await api(source, 'POST', '', { eventTypes: ['document.created'] });
      expect(missing.json().errors).toEqual([{ field: 'url', message: 'is required' }]);
      const long = await api(source, 'POST', '', { url: `https://x.example.com/${'a'.repeat(2048)}` });
      expect(long.statusCode).toBe(422);
      expect((await api(source, 'GET', '')).json()).toEqual({ data: [] });
    });

    it('allows at most 10 endpoints per source, also when created in parallel', async () => {
      const source = await newSourceWithKey(t.app);
      const results = await Promise.all(Array.from({ length: 14 }, (_, i) => api(source, 'POST', '', { url: `https://hooks.example.com/${i}` })));
      expect(results.filter((r) => r.statusCode === 201)).toHaveLength(10);
      const refused = results.filter((r) => r.statusCode !== 201);
      expect(refused.map((r) => r.json().code)).toEqual(Array(4).fill('VALIDATION_ERROR'));
      expect((await api(source, 'GET', '')).json().data).toHaveLength(10);
    });

    it("answers 404 for another source's endpoint, an unknown id and a non-UUID", async () => {
      const owner = await newSourceWithKey(t.app);
      const other = await newSourceWithKey(t.app);
      const { id } = await register(owner, 'https://hooks.example.com/own');
      for (const [method, url, payload] of [
        ['GET', `/${id}`],
        ['PATCH', `/${id}`, { enabled: false }],
        ['DELETE', `/${id}`],
        ['POST', `/${id}/rotate-secret`],
        ['GET', `/${id}/deliveries`],
        ['POST', `/${id}/deliveries/1/retry`],
        ['GET', '/00000000-0000-0000-0000-000000000000'],
        ['GET', '/not-a-uuid'],
      ] as const) {
        const res = await api(other, method, url, payload);
        expect([method, url, res.statusCode, res.json().code]).toEqual([method, url, 404, 'NOT_FOUND']);
      }
      expect((await api(owner, 'GET', `/${id}`)).json().enabled).toBe(true);
    });
  });

  describe('administration', () => {
    it("lists every source's endpoints without secrets, the deliveries by source and status, and retries one", async () => {
      const source = await newSourceWithKey(t.app);
      const hook = await receiver(() => ({ status: 500 }));
      const endpoint = await register(source, hook.url, { eventTypes: ['document.created'] });
      const event = await eventOf(source, (await createDocument(source)).id);
      const failed = await settled(source, endpoint.id, event.id, 'failed');

      const admin = (method: 'GET' | 'POST', url: string, token = TEST_ADMIN_TOKEN) =>
        t.app.inject({ method, url, headers: { authorization: `Bearer ${token}` } });
      const endpoints = await admin('GET', `/admin/webhook-endpoints?source=${source.source}`);
      expect(endpoints.json().data).toEqual([expect.objectContaining({ id: endpoint.id, source: source.source, url: hook.url, enabled: true })]);
      expect(endpoints.body).not.toContain(endpoint.secret);
      expect(endpoints.body).not.toContain('secret');
      const listed = (await admin('GET', `/admin/outbound-deliveries?source=${source.source}&status=failed`)).json().data;
      expect(listed).toEqual([{ ...failed, source: source.source, endpointId: endpoint.id, endpointUrl: hook.url, documentId: expect.any(String) }]);
      expect((await admin('GET', `/admin/outbound-deliveries?source=${source.source}&status=succeeded`)).json().data).toEqual([]);
      expect((await admin('GET', '/admin/outbound-deliveries?status=nope')).statusCode).toBe(422);
      expect((await admin('GET', '/admin/outbound-deliveries', 'wrong-token-0123456789')).statusCode).toBe(401);
      expect((await admin('POST', `/admin/outbound-deliveries/${failed.id}/retry`, 'wrong-token-0123456789')).statusCode).toBe(401);

      hook.respond = () => ({ status: 200 });
      const retried = await admin('POST', `/admin/outbound-deliveries/${failed.id}/retry`);
      expect([retried.statusCode, retried.json().status]).toEqual([202, 'pending']);
      expect(await settled(source, endpoint.id, event.id, 'succeeded')).toMatchObject({ attempts: 4 });
      expect((await admin('POST', '/admin/outbound-deliveries/999999999/retry')).statusCode).toBe(404);
      // Above the bigint range, too: an id is looked up, and one no row can have is simply unknown.
      expect((await admin('POST', '/admin/outbound-deliveries/9999999999999999999/retry')).statusCode).toBe(404);
      expect((await api(source, 'POST', `/${endpoint.id}/deliveries/9999999999999999999/retry`)).statusCode).toBe(404);
    });
  });

  describe('delivery', () => {
    it('pushes each event signed per Standard Webhooks, with the feed event as data and its id as webhook-id', async () => {
      const source = await newSourceWithKey(t.app);
      const hook = await receiver();
      const endpoint = await register(source, hook.url);
      const document = await createDocument(source);
      await cancelDocument(t.app, source.key, document.id);
      await waitFor(async () => hook.messages.length >= 2, 'two messages');

      const verifier = new Webhook(endpoint.secret);
      for (const type of ['document.created', 'document.status_changed']) {
        const event = await eventOf(source, document.id, type);
        const [message] = hook.attemptsOf(event.id);
        expect(message.headers['content-type']).toBe('application/json');
        expect(Math.abs(Number(message.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
        const payload = verifier.verify(message.body, message.headers as Record<string, string>);
        expect(payload).toEqual({ type, timestamp: event.createdAt, data: event });
        expect(await settled(source, endpoint.id, event.id, 'succeeded')).toEqual({
          id: expect.any(String),
          eventId: event.id,
          eventType: type,
          status: 'succeeded',
          attempts: 1,
          lastAttemptAt: expect.any(String),
          lastResponseStatus: 204,
          lastError: null,
          nextAttemptAt: null,
        });
      }
      const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metrics).toMatch(/^outbound_webhook_attempts_total\{outcome="succeeded"\} [1-9]/m);
      expect(metrics).toMatch(/^outbound_webhook_attempt_duration_seconds_count\{result="success"\} [1-9]/m);
      expect(metrics).toMatch(/^outbound_webhook_queue_depth \d+$/m);
      expect(metrics).toMatch(/^outbound_webhook_oldest_due_age_seconds [\d.]+$/m);
      const [attempt] = (
        await t.db.query('SELECT * FROM outbound_delivery_attempts a JOIN outbound_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1 LIMIT 1', [
          endpoint.id,
        ])
      ).rows;
      expect(attempt).toMatchObject({ response_status: 204, error: null, duration_ms: expect.any(Number) });
    });

    it('holds a delivery back while the instance is saturated, until it has been due for 0.75 s, and not otherwise', async () => {
      const source = await newSourceWithKey(t.app);
      const hook = await receiver();
      await register(source, hook.url, { eventTypes: ['document.created'] });
      const saturated = jest.spyOn(t.app.get(EventLoopLoad), 'busy').mockReturnValue(true);
      try {
        // A claim round that began before the spy (the poll's, say) could still find the delivery.
        await claims.idle();
        const sentAt = Date.now();
        await createDocument(source);
        await waitFor(async () => hook.messages.length === 1, 'the held-back delivery');
        // Due from the create's transaction on, which began after sentAt. No commit wakes the worker
        // meanwhile: it looks again by itself, well before the 10 s poll (a bound with room for a busy machine).
        expect(hook.messages[0].receivedAt - sentAt).toBeGreaterThanOrEqual(750);
        expect(hook.messages[0].receivedAt - sentAt).toBeLessThan(6000);

        saturated.mockReturnValue(false);
        await claims.idle();
        claims.rounds.length = 0;
        const nextSentAt = Date.now();
        await createDocument(source);
        await waitFor(async () => hook.messages.length === 2, 'the next delivery');
        // Not held back: every round since asked for deliveries due for any time at all (how long the attempt
        // then took depends on the machine), and the commit woke it, well before the poll.
        expect(claims.rounds.length).toBeGreaterThan(0);
        expect(claims.rounds.map((round) => round.minAgeSeconds)).toEqual(claims.rounds.map(() => 0));
        expect(hook.messages[1].receivedAt - nextSentAt).toBeLessThan(6000);
      } finally {
        saturated.mockRestore();
      }
    });

    it('retries while the instance is saturated once the retry has been due for 0.75 s, without waiting for the poll', async () => {
      const source = await newSourceWithKey(t.app);
      const hook = await receiver((_message, index) => ({ status: index === 0 ? 500 : 204 }));
      await register(source, hook.url, { eventTypes: ['document.created'] });
      // Saturated from before the first attempt: however late this test looks, the retry cannot have gone out unheld.
      const saturated = jest.spyOn(t.app.get(EventLoopLoad), 'busy').mockReturnValue(true);
      try {
        await claims.idle();
        await createDocument(source);
        await waitFor(async () => hook.messages.length === 2, 'the first attempt and the retry');
        // The schedule's 1 s ± 10 %, then 0.75 s held back; the poll comes only every 10 s (a bound with room for a busy machine).
        const gap = hook.messages[1].receivedAt - hook.messages[0].receivedAt;
        expect(gap).toBeGreaterThanOrEqual(1600);
        expect(gap).toBeLessThan(8000);
      } finally {
        saturated.mockRestore();
      }
    });

    it('sends only the subscribed event types, and nothing of another source', async () => {
      const source = await newSourceWithKey(t.app);
      const other = await newSourceWithKey(t.app);
      const hook = await receiver();
      await register(source, hook.url, { eventTypes: ['document.status_changed'] });
      const document = await createDocument(source);
      await createDocument(other);
      await cancelDocument(t.app, source.key, document.id);
      const cancelled = await eventOf(source, document.id, 'document.status_changed');
      await waitFor(async () => hook.attemptsOf(cancelled.id).length === 1, 'the status change');
      // The creation event was committed before the status change: had it been sent, it would be here.
      expect(hook.messages.map((m) => JSON.parse(m.body).type)).toEqual(['document.status_changed']);
    });

    it('retries a 500, a timeout and a redirect on the schedule with the same webhook-id, then succeeds', async () => {
      const source = await newSourceWithKey(t.app);
      const answers = [{ status: 500 }, 'hang', { status: 302, headers: { location: 'http://127.0.0.1:1/elsewhere' } }, { status: 200 }] as const;
      const hook = await receiver((_m, index) => answers[Math.min(index, answers.length - 1)]);
      const endpoint = await register(source, hook.url, { eventTypes: ['document.created'] });
      const document = await createDocument(source);
      const event = await eventOf(source, document.id);
      // Schedule 1s,1s: attempts 1, 2 and 3 fail (500, timeout, redirect); there is no fourth.
      const failed = await settled(source, endpoint.id, event.id, 'failed');
      expect(failed).toMatchObject({ attempts: 3, lastResponseStatus: 302, lastError: 'redirect', nextAttemptAt: null });
      expect(hook.messages.map((m) => m.headers['webhook-id'])).toEqual([event.id, event.id, event.id]);
      const gaps = hook.messages.slice(1).map((m, i) => m.receivedAt - hook.messages[i].receivedAt);
      expect(gaps.every((gap) => gap >= 900)).toBe(true);
      const attempts = (
        await t.db.query(
          `SELECT a.response_status, a.error FROM outbound_delivery_attempts a JOIN outbound_deliveries d ON d.id = a.delivery_id WHERE d.event_id = $1 ORDER BY a.id`,
          [event.id],
        )
      ).rows;
      expect(attempts).toEqual([
        { response_status: 500, error: 'http_error' },
        { response_status: null, error: 'timeout' },
        { response_status: 302, error: 'redirect' },
      ]);

      // A manual retry starts a fresh schedule: the receiver now answers 200.
      const retried = await api(source, 'POST', `/${endpoint.id}/deliveries/${failed.id}/retry`);
      expect(retried.statusCode).toBe(202);
      expect(retried.json()).toMatchObject({ id: failed.id, status: 'pending' });
      expect(await settled(source, endpoint.id, event.id, 'succeeded')).toMatchObject({ attempts: 4, lastResponseStatus: 200 });
      expect(hook.attemptsOf(event.id)).toHaveLength(4);
      const again = await api(source, 'POST', `/${endpoint.id}/deliveries/${failed.id}/retry`);
      expect([again.statusCode, again.json().code]).toEqual([409, 'INVALID_STATE_TRANSITION']);
      expect((await deliveries(source, endpoint.id, '?status=failed')).data).toEqual([]);
    });

    it('waits at least Retry-After after a 429', async () => {
      const source = await newSourceWithKey(t.app);
      const hook = await receiver((_m, index) => (index === 0 ? { status: 429, headers: { 'retry-after': '3' } } : { status: 200 }));
      const endpoint = await register(source, hook.url, { eventTypes: ['document.created'] });
      const event = await eventOf(source, (await createDocument(source)).id);
      await settled(source, endpoint.id, event.id, 'succeeded');
      expect(hook.messages[1].receivedAt - hook.messages[0].receivedAt).toBeGreaterThanOrEqual(2900);
    });

    it('disables the endpoint on a 410 and sends it nothing more', async () => {
      const source = await newSourceWithKey(t.app);
      const hook = await receiver(() => ({ status: 410 }));
      const endpoint = await register(source, hook.url, { eventTypes: ['document.created'] });
      const first = await eventOf(source, (await createDocument(source)).id);
      await settled(source, endpoint.id, first.id, 'failed');
      expect((await api(source, 'GET', `/${endpoint.id}`)).json()).toMatchObject({ enabled: false, disabledReason: 'gone' });
      await createDocument(source);
      expect((await deliveries(source, endpoint.id)).data).toHaveLength(1);
      expect(hook.messages).toHaveLength(1);
    });

    it('disables an endpoint whose attempts have all failed for 5 days, and a success clears the count', async () => {
      const source = await newSourceWithKey(t.app);
      const hook = await receiver(() => ({ status: 503 }));
      const endpoint = await register(source, hook.url, { eventTypes: ['document.created'] });
      // Failing for 4 days: one more failure keeps it enabled.
      await t.db.query(`UPDATE webhook_endpoints SET failing_since = now() - interval '4 days' WHERE id = $1`, [endpoint.id]);
      const first = await eventOf(source, (await createDocument(source)).id);
      await waitFor(async () => (await deliveryOf(source, endpoint.id, first.id))?.attempts >= 1, 'the first attempt');
      expect((await api(source, 'GET', `/${endpoint.id}`)).json()).toMatchObject({ enabled: true, disabledReason: null });
      await t.db.query(`UPDATE webhook_endpoints SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`, [endpoint.id]);
      await createDocument(source);
      await waitFor(async () => (await api(source, 'GET', `/${endpoint.id}`)).json().disabledReason === 'failing', 'the endpoint to be disabled');
      expect((await api(source, 'GET', `/${endpoint.id}`)).json().enabled).toBe(false);

      hook.respond = () => ({ status: 200 });
      expect((await api(source, 'PATCH', `/${endpoint.id}`, { enabled: true })).json()).toMatchObject({ enabled: true, disabledReason: null });
      const later = await eventOf(source, (await createDocument(source)).id);
      await settled(source, endpoint.id, later.id, 'succeeded');
      expect((await t.db.query('SELECT failing_since FROM webhook_endpoints WHERE id = $1', [endpoint.id])).rows[0].failing_since).toBeNull();
    });

    it('sends nothing to a disabled or a deleted endpoint', async () => {
      const source = await newSourceWithKey(t.app);
      const disabledHook = await receiver();
      const deletedHook = await receiver();
      const liveHook = await receiver();
      const disabled = await register(source, disabledHook.url, { eventTypes: ['document.created'] });
      const deleted = await register(source, deletedHook.url, { eventTypes: ['document.created'] });
      const live = await register(source, liveHook.url, { eventTypes: ['document.created'] });
      await api(source, 'PATCH', `/${disabled.id}`, { enabled: false });
      await api(source, 'DELETE', `/${deleted.id}`);
      const event = await eventOf(source, (await createDocument(source)).id);
      // The live endpoint got it, so the others would have had it by now had they been sent it.
      await settled(source, live.id, event.id, 'succeeded');
      expect([disabledHook.messages.length, deletedHook.messages.length]).toEqual([0, 0]);
      expect((await deliveries(source, disabled.id)).data).toEqual([]);
    });

    it('deletes, with the endpoint, the delivery of a create that enqueued it and had not committed yet', async () => {
      const source = await newSourceWithKey(t.app);
      const hook = await receiver();
      const endpoint = await register(source, hook.url, { eventTypes: ['document.created'] });
      // The create stops right after the feed's trigger inserted its delivery, before it commits.
      const hold = await holdInsert(t.db, t.databaseUrl, 'outbound_deliveries', `NEW.source = '${source.source}'`);
      try {
        const created = postDocument(t.app, source.key, documentBody(source.source));
        await hold.held();
        let answered = false;
        const deleted = api(source, 'DELETE', `/${endpoint.id}`).then((res) => ((answered = true), res));
        const deleteWaits = async () =>
          (await t.db.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1`, [ENDPOINTS_LOCK_NAMESPACE])).rowCount === 1;
        await waitFor(async () => answered || (await deleteWaits()), 'the delete waiting for the create');
        await hold.release();
        expect((await created).statusCode).toBe(201);
        expect((await deleted).statusCode).toBe(204);
      } finally {
        await hold.remove();
      }
      expect((await t.db.query('SELECT id FROM outbound_deliveries WHERE endpoint_id = $1', [endpoint.id])).rows).toEqual([]);
    });

    it('signs with the new and the previous secret during the grace period after a rotation', async () => {
      const source = await newSourceWithKey(t.app);
      const hook = await receiver();
      const endpoint = await register(source, hook.url, { eventTypes: ['document.created'] });
      const rotated = await api(source, 'POST', `/${endpoint.id}/rotate-secret`);
      expect(rotated.statusCode).toBe(200);
      expect(rotated.headers['cache-control']).toBe('no-store');
      const { secret } = rotated.json();
      expect(secret).toMatch(/^whsec_/);
      expect(secret).not.toBe(endpoint.secret);
      const event = await eventOf(source, (await createDocument(source)).id);
      await waitFor(async () => hook.attemptsOf(event.id).length === 1, 'the message');
      const [message] = hook.attemptsOf(event.id);
      expect(String(message.headers['webhook-signature']).split(' ')).toHaveLength(2);
      for (const key of [secret, endpoint.secret]) {
        expect(() => new Webhook(key).verify(message.body, message.headers as Record<string, string>)).not.toThrow();
      }
    });

    it('pages the delivery log newest first with a cursor', async () => {
      const source = await newSourceWithKey(t.app);
      const hook = await receiver();
      const endpoint = await register(source, hook.url, { eventTypes: ['document.created'] });
      for (let i = 0; i < 5; i += 1) await createDocument(source);
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { data: { id: string }[]; nextCursor: string | null } = await deliveries(
          source,
          endpoint.id,
          `?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        );
        ids.push(...page.data.map((d) => d.id));
        cursor = page.nextCursor;
      } while (cursor);
      expect(ids).toHaveLength(5);
      expect([...ids].sort((a, b) => Number(b) - Number(a))).toEqual(ids);
      const bad = await api(source, 'GET', `/${endpoint.id}/deliveries?status=done&cursor=zzz&limit=0`);
      expect(
        bad
          .json()
          .errors.map((e: { field: string }) => e.field)
          .sort(),
      ).toEqual(['limit', 'status']);
    });
  });
});

describe('push notifications to non-public addresses (OUTBOUND_WEBHOOKS_ALLOW_PRIVATE=false)', () => {
  let t: TestApp;
  let hook: WebhookReceiver;

  beforeAll(async () => {
    t = await startTestApp({ env: { ...ENV, OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'false' } });
    hook = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await hook.stop();
    await t.close();
  });

  it.each([
    [
      'https://127.0.0.1/hooks',
      'must not point to a loopback, private, link-local or otherwise non-public address (http:// and private addresses are accepted only with OUTBOUND_WEBHOOKS_ALLOW_PRIVATE=true, for local trials)',
    ],
    [
      'https://localhost/hooks',
      'must not point to a loopback, private, link-local or otherwise non-public address (http:// and private addresses are accepted only with OUTBOUND_WEBHOOKS_ALLOW_PRIVATE=true, for local trials)',
    ],
    [
      'https://10.1.2.3/hooks',
      'must not point to a loopback, private, link-local or otherwise non-public address (http:// and private addresses are accepted only with OUTBOUND_WEBHOOKS_ALLOW_PRIVATE=true, for local trials)',
    ],
    [
      'https://169.254.169.254/latest/meta-data',
      'must not point to a loopback, private, link-local or otherwise non-public address (http:// and private addresses are accepted only with OUTBOUND_WEBHOOKS_ALLOW_PRIVATE=true, for local trials)',
    ],
    [
      'https://[::1]/hooks',
      'must not point to a loopback, private, link-local or otherwise non-public address (http:// and private addresses are accepted only with OUTBOUND_WEBHOOKS_ALLOW_PRIVATE=true, for local trials)',
    ],
    [
      'https://[::ffff:127.0.0.1]/hooks',
      'must not point to a loopback, private, link-local or otherwise non-public address (http:// and private addresses are accepted only with OUTBOUND_WEBHOOKS_ALLOW_PRIVATE=true, for local trials)',
    ],
    [
      'http://93.184.216.34/hooks',
      'must be an https:// URL (http:// and private addresses are accepted only with OUTBOUND_WEBHOOKS_ALLOW_PRIVATE=true, for local trials)',
    ],
  ])('refuses %s at creation with 422', async (url, message) => {
    const key = await newSourceWithKey(t.app);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhook-endpoints',
      headers: { 'x-api-key': key.key, 'x-idempotency-key': newIdempotencyKey() },
      payload: { url },
    });
    expect([res.statusCode, res.json().errors]).toEqual([422, [{ field: 'url', message }]]);
    expect((await t.db.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE source = $1', [key.source])).rows[0].n).toBe(0);
  });

  it('refuses at delivery time the address actually connected to, for a literal address and for a name that resolves to one, and does not retry it', async () => {
    const key = await newSourceWithKey(t.app);
    // As if registered while the name still resolved to a public address (DNS rebinding), or while
    // OUTBOUND_WEBHOOKS_ALLOW_PRIVATE was true (a local trial), or written by an older version.
    const urls = [hook.url, hook.url.replace('127.0.0.1', 'localhost')];
    for (const url of urls) {
      await t.db.query(
        `INSERT INTO webhook_endpoints (source, url, event_types, secret) VALUES ($1, $2, '{document.created}', 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0')`,
        [key.source, url],
      );
    }
    await postDocument(t.app, key.key, documentBody(key.source));
    const deliveries = await waitFor(async () => {
      const { rows } = await t.db.query(`SELECT last_error, status, attempts, next_attempt_at FROM outbound_deliveries WHERE source = $1 AND attempts > 0`, [
        key.source,
      ]);
      return rows.length === 2 && rows;
    }, 'both attempts');
    // Failed at the first attempt: the rule that refused it would refuse every retry.
    expect(deliveries).toEqual([
      { last_error: 'blocked_address', status: 'failed', attempts: 1, next_attempt_at: null },
      { last_error: 'blocked_address', status: 'failed', attempts: 1, next_attempt_at: null },
    ]);
    expect(hook.messages).toHaveLength(0);
  });
});

describe("an operator's stop, through a listening gateway", () => {
  let t: TestApp;
  let gateway: string;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    t = await startTestApp({ env: ENV });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    gateway = await t.app.getUrl();
  });
  afterAll(async () => {
    for (const r of receivers) await r.stop();
    await t.close();
  });

  const call = async (method: string, path: string, headers: Record<string, string>, body?: unknown) => {
    const res = await fetch(`${gateway}${path}`, {
      method,
      headers: {
        ...headers,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(method === 'POST' ? { 'x-idempotency-key': newIdempotencyKey() } : {}),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: res.status === 204 ? null : await res.json() };
  };

  it('holds for every spelling of the stopped URL: a fragment is refused, and each equivalent URL is a 409 like the exact one', async () => {
    const key = await newSourceWithKey(t.app);
    const client = { 'x-api-key': key.key };
    const stoppedHook = await new WebhookReceiver().start('/hook-a');
    const otherHook = await new WebhookReceiver().start('/hook-b');
    receivers.push(stoppedHook, otherHook);
    const stopped = await call('POST', '/api/v1/webhook-endpoints', client, { url: stoppedHook.url });
    expect(stopped.status).toBe(201);
    const other = await call('POST', '/api/v1/webhook-endpoints', client, { url: otherHook.url });
    expect(other.status).toBe(201);
    const stop = await call('PATCH', `/admin/webhook-endpoints/${stopped.body.id}`, { authorization: `Bearer ${TEST_ADMIN_TOKEN}` }, { enabled: false });
    expect([stop.status, stop.body.disabledReason]).toEqual([200, 'admin']);

    const port = stoppedHook.port;
    const fragment = await call('POST', '/api/v1/webhook-endpoints', client, { url: `${stoppedHook.url}#x` });
    expect([fragment.status, fragment.body.code, fragment.body.errors]).toEqual([
      422,
      'VALIDATION_ERROR',
      [{ field: 'url', message: 'must not contain a fragment (#…)' }],
    ]);
    const spellings = [
      stoppedHook.url,
      `${stoppedHook.url}?`,
      `http://localhost:${port}/hook-a`,
      `${stoppedHook.url}/`,
      `http://127.0.0.1:${port}/%68ook-a`,
      `http://127.0.0.1:${port}//hook-a`,
    ];
    for (const url of spellings) {
      for (const [method, path] of [
        ['POST', '/api/v1/webhook-endpoints'],
        ['PATCH', `/api/v1/webhook-endpoints/${other.body.id}`],
      ]) {
        const refused = await call(method, path, client, { url });
        expect([url, method, refused.status, refused.body.code]).toEqual([url, method, 409, 'INVALID_STATE_TRANSITION']);
      }
    }
    const { rows } = await t.db.query('SELECT url FROM webhook_endpoints WHERE source = $1 ORDER BY created_at', [key.source]);
    expect(rows).toEqual([{ url: stoppedHook.url }, { url: otherHook.url }]);

    // What the other endpoint gets, the stopped receiver would have got too had any spelling been registered.
    const document = await postDocument(t.app, key.key, documentBody(key.source));
    expect(document.statusCode).toBe(201);
    await waitFor(async () => otherHook.messages.some((m) => m.body.includes(document.json().id)), 'the push to the other endpoint');
    expect(stoppedHook.messages).toEqual([]);

    // The operator's lift reaches the endpoint whatever spelling the stop was made through.
    const lift = await call('PATCH', `/admin/webhook-endpoints/${stopped.body.id}`, { authorization: `Bearer ${TEST_ADMIN_TOKEN}` }, { enabled: true });
    expect([lift.status, lift.body.enabled]).toEqual([200, true]);
    expect((await call('POST', '/api/v1/webhook-endpoints', client, { url: `${stoppedHook.url}/` })).status).toBe(201);
  });

  it('stops every endpoint of the source at another spelling of the URL, and lifts the stop from them all', async () => {
    const key = await newSourceWithKey(t.app);
    const client = { 'x-api-key': key.key };
    const hook = await new WebhookReceiver().start('/hook-a');
    receivers.push(hook);
    const first = await call('POST', '/api/v1/webhook-endpoints', client, { url: hook.url });
    const twin = await call('POST', '/api/v1/webhook-endpoints', client, { url: `http://localhost:${hook.port}//hook-a/` });
    const elsewhere = await call('POST', '/api/v1/webhook-endpoints', client, { url: `http://localhost:${hook.port}/hook-b` });
    expect([first.status, twin.status, elsewhere.status]).toEqual([201, 201, 201]);
    const admin = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
    expect((await call('PATCH', `/admin/webhook-endpoints/${first.body.id}`, admin, { enabled: false })).status).toBe(200);
    const state = async (id: string) => (await call('GET', `/api/v1/webhook-endpoints/${id}`, client)).body;
    expect(await state(twin.body.id)).toMatchObject({ enabled: false, disabledReason: 'admin' });
    expect(await state(elsewhere.body.id)).toMatchObject({ enabled: true, disabledReason: null });
    expect((await call('PATCH', `/admin/webhook-endpoints/${first.body.id}`, admin, { enabled: true })).status).toBe(200);
    expect(await state(twin.body.id)).toMatchObject({ enabled: true, disabledReason: null });
  });
});

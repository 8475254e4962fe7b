import { jest } from '@jest/globals';
import { Client } from 'pg';
import { freePort } from '../../src/database/embedded-postgres.js';
import { EventLoopLoad } from '../../src/outbound-webhooks/event-loop-load.js';
import { createTestDatabase, dropTestDatabase } from '../support/database.js';
import { watchClaims } from '../support/delivery-claims.js';
import { documentBody, newIdempotencyKey, newSourceWithKey } from '../support/factories.js';
import { Spawned, startGateway, waitFor } from '../support/processes.js';
import { startTestApp, TEST_ADMIN_TOKEN, TEST_WEBHOOK_SECRET, TestApp } from '../support/test-app.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

const ENV = {
  OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true',
  OUTBOUND_WEBHOOKS_RETRY_SCHEDULE: '1s,1s',
  OUTBOUND_WEBHOOKS_POLL_SECONDS: '1',
};

const registerEndpoint = async (
  post: (url: string, body: unknown, key: string) => Promise<{ status: number; body: { id: string } }>,
  key: string,
  url: string,
) => {
  const res = await post('/api/v1/webhook-endpoints', { url, eventTypes: ['document.created'] }, key);
  expect(res.status).toBe(201);
  return res.body;
};

describe('push notifications across instances', () => {
  let receiver: WebhookReceiver;
  beforeEach(async () => {
    receiver = await new WebhookReceiver().start();
  });
  afterEach(() => receiver.stop());

  it('delivers 40 events created through two instances exactly once each', async () => {
    const a = await startTestApp({ env: { ...ENV, OUTBOUND_WEBHOOKS_LEASE_SECONDS: '30' } });
    const b = await startTestApp({ env: { ...ENV, OUTBOUND_WEBHOOKS_LEASE_SECONDS: '30' }, databaseUrl: a.databaseUrl });
    try {
      // A slow receiver, so that both instances have attempts in flight at the same time.
      receiver.respond = () => ({ status: 200, delayMs: 30 });
      const key = await newSourceWithKey(a.app);
      const inject = (app: TestApp) => (url: string, body: unknown, apiKey: string) =>
        app.app
          .inject({ method: 'POST', url, headers: { 'x-api-key': apiKey, 'x-idempotency-key': newIdempotencyKey() }, payload: body as object })
          .then((res) => ({ status: res.statusCode, body: res.json() }));
      const endpoint = await registerEndpoint(inject(a), key.key, receiver.url);
      const created = await Promise.all(Array.from({ length: 40 }, (_, i) => inject(i % 2 ? a : b)('/api/v1/documents', documentBody(key.source), key.key)));
      expect(created.map((r) => r.status)).toEqual(Array(40).fill(201));

      const rows = await waitFor(async () => {
        const { rows } = await a.db.query(`SELECT event_id, status, attempts FROM outbound_deliveries WHERE endpoint_id = $1`, [endpoint.id]);
        return rows.length === 40 && rows.every((r) => r.status === 'succeeded') && rows;
      }, '40 delivered');
      expect(rows.map((r) => r.attempts)).toEqual(Array(40).fill(1));
      const ids = receiver.messages.map((m) => m.headers['webhook-id']);
      expect(ids).toHaveLength(40);
      expect(new Set(ids)).toEqual(new Set(rows.map((r) => String(r.event_id))));
    } finally {
      await b.close();
      await a.close();
    }
  });

  it('releases the claims of attempts still running when an instance shuts down, for another to make at once', async () => {
    const leaving = await startTestApp({ env: { ...ENV, OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS: '30', OUTBOUND_WEBHOOKS_LEASE_SECONDS: '100' } });
    const { databaseUrl } = leaving;
    receiver.respond = () => 'hang';
    const key = await newSourceWithKey(leaving.app);
    const post = (url: string, body: unknown, apiKey: string) =>
      leaving.app
        .inject({ method: 'POST', url, headers: { 'x-api-key': apiKey, 'x-idempotency-key': newIdempotencyKey() }, payload: body as object })
        .then((res) => ({ status: res.statusCode, body: res.json() }));
    const endpoint = await registerEndpoint(post, key.key, receiver.url);
    expect((await post('/api/v1/documents', documentBody(key.source), key.key)).status).toBe(201);
    await waitFor(async () => receiver.messages.length === 1, 'the attempt in flight');

    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      // close() without dropping the database: the next instance works on it.
      await leaving.app.close();
      const [row] = (await db.query(`SELECT status, leased_by, attempts FROM outbound_deliveries WHERE endpoint_id = $1`, [endpoint.id])).rows;
      expect(row).toEqual({ status: 'pending', leased_by: null, attempts: 0 });

      receiver.respond = () => ({ status: 200 });
      const next = await startTestApp({ env: { ...ENV, OUTBOUND_WEBHOOKS_LEASE_SECONDS: '100' }, databaseUrl });
      try {
        // Well before the 100 s lease could have ended: the claim was released.
        await waitFor(
          async () => (await db.query(`SELECT status FROM outbound_deliveries WHERE endpoint_id = $1`, [endpoint.id])).rows[0].status === 'succeeded',
          'the released delivery',
        );
      } finally {
        await next.close();
      }
    } finally {
      await db.end();
      await leaving.db.end().catch(() => undefined);
      await dropTestDatabase(databaseUrl);
    }
  });

  it("claims ahead only as much as an endpoint's slots allow, and releases what waits for a slot on shutdown", async () => {
    // 2 slots per endpoint, and a lease long enough for two attempts' wait and its own: 2 × 2 more are
    // claimed ahead, and the other 2 of 8 are left for another instance.
    const env = { ...ENV, OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY: '2', OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS: '30', OUTBOUND_WEBHOOKS_LEASE_SECONDS: '100' };
    const leaving = await startTestApp({ env });
    const { databaseUrl } = leaving;
    receiver.respond = () => 'hang';
    const key = await newSourceWithKey(leaving.app);
    const post = (url: string, body: unknown, apiKey: string) =>
      leaving.app
        .inject({ method: 'POST', url, headers: { 'x-api-key': apiKey, 'x-idempotency-key': newIdempotencyKey() }, payload: body as object })
        .then((res) => ({ status: res.statusCode, body: res.json() }));
    const endpoint = await registerEndpoint(post, key.key, receiver.url);
    for (let i = 0; i < 8; i += 1) expect((await post('/api/v1/documents', documentBody(key.source), key.key)).status).toBe(201);

    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    const leased = async () =>
      (await db.query(`SELECT count(*)::int AS n FROM outbound_deliveries WHERE endpoint_id = $1 AND leased_by IS NOT NULL`, [endpoint.id])).rows[0].n;
    try {
      await waitFor(async () => receiver.messages.length === 2 && (await leased()) === 6, 'two attempts in flight and four claimed ahead');
      expect(receiver.messages).toHaveLength(2);

      await leaving.app.close();
      const rows = (await db.query(`SELECT status, leased_by, attempts FROM outbound_deliveries WHERE endpoint_id = $1`, [endpoint.id])).rows;
      expect(rows).toEqual(Array(8).fill({ status: 'pending', leased_by: null, attempts: 0 }));

      receiver.respond = () => ({ status: 200 });
      const next = await startTestApp({ env, databaseUrl });
      try {
        await waitFor(
          async () =>
            (await db.query(`SELECT count(*)::int AS n FROM outbound_deliveries WHERE endpoint_id = $1 AND status = 'succeeded'`, [endpoint.id])).rows[0].n ===
            8,
          'all eight delivered',
          30000,
        );
        const ids = receiver.messages.slice(2).map((m) => m.headers['webhook-id']);
        expect(new Set(ids).size).toBe(8);
        expect(ids).toHaveLength(8);
      } finally {
        await next.close();
      }
    } finally {
      await db.end();
      await leaving.db.end().catch(() => undefined);
      await dropTestDatabase(databaseUrl);
    }
  });

  it('delivers to other endpoints while one has every slot taken and a backlog, leaving that backlog unclaimed', async () => {
    const env = { ...ENV, OUTBOUND_WEBHOOKS_ENDPOINT_CONCURRENCY: '2', OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS: '30', OUTBOUND_WEBHOOKS_LEASE_SECONDS: '100' };
    const gateway = await startTestApp({ env });
    const healthy = await new WebhookReceiver().start();
    receiver.respond = () => 'hang';
    try {
      const post = (url: string, body: unknown, apiKey: string) =>
        gateway.app
          .inject({ method: 'POST', url, headers: { 'x-api-key': apiKey, 'x-idempotency-key': newIdempotencyKey() }, payload: body as object })
          .then((res) => ({ status: res.statusCode, body: res.json() }));
      const stuckKey = await newSourceWithKey(gateway.app);
      const stuck = await registerEndpoint(post, stuckKey.key, receiver.url);
      for (let i = 0; i < 8; i += 1) expect((await post('/api/v1/documents', documentBody(stuckKey.source), stuckKey.key)).status).toBe(201);
      const leased = async (endpointId: string) =>
        (await gateway.db.query(`SELECT count(*)::int AS n FROM outbound_deliveries WHERE endpoint_id = $1 AND leased_by IS NOT NULL`, [endpointId])).rows[0].n;
      // Two attempts hang and 2 × 2 more wait here for their slots: the other two stay in the database.
      await waitFor(async () => receiver.messages.length === 2 && (await leased(stuck.id)) === 6, 'the stuck endpoint saturated');

      const otherKey = await newSourceWithKey(gateway.app);
      const other = await registerEndpoint(post, otherKey.key, healthy.url);
      for (let i = 0; i < 3; i += 1) expect((await post('/api/v1/documents', documentBody(otherKey.source), otherKey.key)).status).toBe(201);
      const delivered = async () =>
        (await gateway.db.query(`SELECT count(*)::int AS n FROM outbound_deliveries WHERE endpoint_id = $1 AND status = 'succeeded'`, [other.id])).rows[0].n;
      await waitFor(async () => (await delivered()) === 3, "the other endpoint's three deliveries");

      expect(healthy.messages).toHaveLength(3);
      expect(receiver.messages).toHaveLength(2);
      expect(await leased(stuck.id)).toBe(6);
    } finally {
      await healthy.stop();
      await gateway.close();
    }
  });

  describe('wake-up', () => {
    const injectPost = (t: TestApp) => (url: string, body: unknown, apiKey: string) =>
      t.app
        .inject({ method: 'POST', url, headers: { 'x-api-key': apiKey, 'x-idempotency-key': newIdempotencyKey() }, payload: body as object })
        .then((res) => ({ status: res.statusCode, body: res.json() }));

    it('attempts a delivery as soon as its transaction commits, and tells the other instances with a NOTIFY of its own', async () => {
      // The poll is at its slowest: three deliveries in a row, each within 6 s, cannot all have been found by it
      // (three polls span 20 s); 6 s leaves room for a busy machine.
      const t = await startTestApp({ env: { ...ENV, OUTBOUND_WEBHOOKS_POLL_SECONDS: '10' } });
      const listener = new Client({ connectionString: t.databaseUrl });
      const heard: string[] = [];
      try {
        await listener.connect();
        listener.on('notification', ({ channel, payload }) => heard.push(`${channel}:${payload}`));
        await listener.query('LISTEN outbound_deliveries');
        const key = await newSourceWithKey(t.app);
        await registerEndpoint(injectPost(t), key.key, receiver.url);
        for (let i = 1; i <= 3; i += 1) {
          expect((await injectPost(t)('/api/v1/documents', documentBody(key.source), key.key)).status).toBe(201);
          await waitFor(async () => receiver.messages.length === i, `delivery ${i}`, 6000);
        }
        // Not from the feed trigger (a notify there would serialise every commit): from the instance, named in the payload.
        await waitFor(async () => heard.length > 0, 'a notification');
        expect(heard[0]).toMatch(/^outbound_deliveries:.+:\d+:[0-9a-f]{8}$/);
      } finally {
        await listener.end();
        await t.close();
      }
    });

    it('leaves the deliveries of a saturated instance to one with time to spare, which it tells at once', async () => {
      const env = { ...ENV, OUTBOUND_WEBHOOKS_POLL_SECONDS: '10' };
      const saturated = await startTestApp({ env });
      const saturatedClaims = watchClaims(saturated.app);
      const idle = await startTestApp({ env, databaseUrl: saturated.databaseUrl });
      const busy = jest.spyOn(saturated.app.get(EventLoopLoad), 'busy').mockReturnValue(true);
      // The two share this process's event loop: only the spies say which one is saturated.
      const notBusy = jest.spyOn(idle.app.get(EventLoopLoad), 'busy').mockReturnValue(false);
      try {
        const key = await newSourceWithKey(saturated.app);
        await registerEndpoint(injectPost(saturated), key.key, receiver.url);
        await waitFor(
          async () =>
            (
              await saturated.db.query(
                `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'tax-document-gateway-listener' AND datname = current_database()`,
              )
            ).rows[0].n === 2,
          'both instances listening',
        );
        // A claim round that began before the spy (the poll's, say) could still find a delivery.
        await saturatedClaims.idle();
        for (let i = 1; i <= 3; i += 1) {
          const sentAt = Date.now();
          const created = await injectPost(saturated)('/api/v1/documents', documentBody(key.source), key.key);
          expect(created.status).toBe(201);
          await waitFor(async () => receiver.messages.length === i, `delivery ${i}`);
          // Not the poll's doing: three in a row, each within 6 s, while three polls of the idle instance span
          // 20 s (6 s leaves room for a busy machine). Which instance made them, the metrics say below.
          expect(receiver.messages[i - 1].receivedAt - sentAt).toBeLessThan(6000);
        }
        // Each instance counts the attempts it made.
        const succeeded = async (t: TestApp) =>
          /^outbound_webhook_attempts_total\{outcome="succeeded"\} (\d+)$/m.exec((await t.app.inject({ method: 'GET', url: '/metrics' })).body)?.[1] ?? '0';
        await waitFor(async () => (await succeeded(idle)) === '3', 'the idle instance to record its three attempts');
        expect(await succeeded(saturated)).toBe('0');
      } finally {
        saturatedClaims.restore();
        busy.mockRestore();
        notBusy.mockRestore();
        await idle.close();
        await saturated.close();
      }
    });

    it('finds by its poll a delivery whose commit woke nobody, as when an instance dies right after committing', async () => {
      const t = await startTestApp({ env: ENV });
      const listener = new Client({ connectionString: t.databaseUrl });
      const heard: string[] = [];
      try {
        const key = await newSourceWithKey(t.app);
        await registerEndpoint(injectPost(t), key.key, receiver.url);
        await listener.connect();
        listener.on('notification', ({ payload }) => heard.push(payload ?? ''));
        await listener.query('LISTEN outbound_deliveries');
        const created = await injectPost(t)('/api/v1/documents', documentBody(key.source), key.key);
        await waitFor(async () => receiver.messages.length === 1, 'the first delivery');
        // The create's own NOTIFY goes out shortly after its commit, perhaps after the delivery: heard first, then forgotten.
        await waitFor(async () => heard.length > 0, "the create's NOTIFY");
        heard.length = 0;
        // An event committed by a connection of the test's own: the trigger enqueues its delivery, and no
        // instance reads the flag it set, so no instance is woken and nothing is notified.
        const { rows } = await t.db.query(
          `INSERT INTO document_events (source, document_id, type, status) SELECT source, id, 'document.created', status FROM documents WHERE id = $1 RETURNING id`,
          [created.body.id],
        );
        await waitFor(async () => receiver.attemptsOf(String(rows[0].id)).length === 1, 'the delivery found by the poll');
        expect(heard).toEqual([]);
      } finally {
        await listener.end();
        await t.close();
      }
    });
  });

  describe('an instance killed with SIGKILL mid-attempt', () => {
    let databaseUrl: string;
    let gateway: Spawned | undefined;
    let survivor: TestApp | undefined;

    beforeAll(async () => {
      databaseUrl = await createTestDatabase();
    });
    afterAll(async () => {
      if (gateway?.child.exitCode === null) gateway.child.kill('SIGKILL');
      await survivor?.close();
      await dropTestDatabase(databaseUrl);
    });

    it('has its claimed deliveries attempted by another instance once the lease has passed', async () => {
      const port = await freePort();
      // The lease is short for the test; attempts would time out after 5 s, long after the kill.
      gateway = startGateway({
        ...ENV,
        DATABASE_URL: databaseUrl,
        PORT: String(port),
        HOST: '127.0.0.1',
        ADMIN_TOKEN: TEST_ADMIN_TOKEN,
        BANK_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
        LOG_LEVEL: 'warn',
        OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS: '5',
        OUTBOUND_WEBHOOKS_LEASE_SECONDS: '6',
      });
      const base = `http://127.0.0.1:${port}`;
      await waitFor(async () => (await fetch(`${base}/health/ready`)).ok, 'gateway');
      const post = async (url: string, body: unknown, apiKey: string) => {
        const res = await fetch(`${base}${url}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'x-idempotency-key': newIdempotencyKey() },
          body: JSON.stringify(body),
        });
        return { status: res.status, body: await res.json() };
      };
      const issued = await fetch(`${base}/admin/api-keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ source: 'killed-instance' }),
      });
      const { key } = (await issued.json()) as { key: string };
      receiver.respond = () => 'hang';
      const endpoint = await registerEndpoint(post, key, receiver.url);
      for (let i = 0; i < 3; i += 1) expect((await post('/api/v1/documents', documentBody('killed-instance'), key)).status).toBe(201);
      await waitFor(async () => receiver.messages.length === 3, 'three attempts in flight');

      gateway.child.kill('SIGKILL');
      await gateway.exited;
      const claimed = await survivorQuery(`SELECT count(*)::int AS n FROM outbound_deliveries WHERE leased_by IS NOT NULL AND status = 'pending'`);
      expect(claimed).toBe(3);

      receiver.respond = () => ({ status: 200 });
      survivor = await startTestApp({ env: { ...ENV, OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS: '5', OUTBOUND_WEBHOOKS_LEASE_SECONDS: '6' }, databaseUrl });
      const rows = await waitFor(async () => {
        const { rows } = await survivor!.db.query(`SELECT event_id, status, attempts FROM outbound_deliveries WHERE endpoint_id = $1`, [endpoint.id]);
        return rows.every((r) => r.status === 'succeeded') && rows;
      }, 'the three deliveries to be taken over');
      expect(rows).toHaveLength(3);
      // Each event twice in all, under one webhook-id, the second not before the killed instance's lease ran out.
      for (const row of rows) {
        const [killed, takenOver] = receiver.attemptsOf(String(row.event_id));
        expect(receiver.attemptsOf(String(row.event_id))).toHaveLength(2);
        expect(takenOver.receivedAt - killed.receivedAt).toBeGreaterThanOrEqual(3000);
      }
    });

    async function survivorQuery(sql: string): Promise<number> {
      const client = new Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        return (await client.query(sql)).rows[0].n;
      } finally {
        await client.end();
      }
    }
  });
});

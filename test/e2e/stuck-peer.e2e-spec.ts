import { mkdtemp } from 'node:fs/promises';
import { removeDataDir } from '../../src/database/embedded-postgres-layout.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getDataSourceToken } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { freePort } from '../../src/database/embedded-postgres.js';
import {
  adminHeaders,
  cancelDocument,
  documentBody,
  newIdempotencyKey,
  newSourceWithKey,
  postDocument,
  sendWebhook,
  signedWebhook,
} from '../support/factories.js';
import { spawnNode, Spawned, startClusterProcess, waitFor } from '../support/processes.js';
import { startTestApp, TestApp, TEST_WEBHOOK_SECRET } from '../support/test-app.js';

/**
 * A peer that took a row lock and then froze (SIGSTOP: its connection stays open, its transaction
 * never ends). The gateway's own requests that need that row must give up with a 503; everything
 * else, readiness included, must go on.
 */
const LOCK_HOLDER = `
const { Client } = require('pg');
(async () => {
  const client = new Client({ connectionString: process.env.LOCK_URL });
  await client.connect();
  await client.query('BEGIN');
  await client.query('SELECT id FROM documents WHERE id = $1 FOR UPDATE', [process.env.LOCK_DOCUMENT]);
  process.stdout.write('LOCKED\\n');
  setInterval(() => undefined, 1000);
})();
`;

describe('a frozen peer holding a lock', () => {
  let t: TestApp;
  let peer: Spawned;
  let lockedDocument: string;
  let locked: { key: string; source: string };
  let other: { key: string; source: string };

  /** Backends of the gateway (not its readiness probe) waiting for a lock right now. */
  const lockWaiters = async () =>
    (
      await t.db.query(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tax-document-gateway' AND wait_event_type = 'Lock'`,
      )
    ).rows.map((row: { pid: number }) => row.pid);

  const waitForLockWaiters = (count: number) => waitFor(async () => (await lockWaiters()).length >= count, `${count} requests waiting on the lock`);

  beforeAll(async () => {
    // A long lock timeout here, so the waiting requests are still waiting while the test looks around.
    t = await startTestApp({ env: { DB_POOL_SIZE: '4', DB_LOCK_TIMEOUT_MS: '60000', RATE_LIMIT_PER_MINUTE: '100000' } });
    locked = await newSourceWithKey(t.app);
    other = await newSourceWithKey(t.app);
    lockedDocument = (await postDocument(t.app, locked.key, documentBody(locked.source))).json().id;
    peer = spawnNode(['-e', LOCK_HOLDER], { LOCK_URL: t.databaseUrl, LOCK_DOCUMENT: lockedDocument });
    await waitFor(async () => peer.stdout().includes('LOCKED'), 'the peer to take its lock');
    peer.child.kill('SIGSTOP');
  });

  afterAll(async () => {
    peer.child.kill('SIGCONT');
    peer.child.kill('SIGKILL');
    await peer.exited;
    await t.close();
  });

  it('keeps serving other sources and stays ready while requests wait on the lock', async () => {
    const waiting = [1, 2, 3].map(() => cancelDocument(t.app, locked.key, lockedDocument));
    await waitForLockWaiters(3);

    const created = await postDocument(t.app, other.key, documentBody(other.source));
    expect(created.statusCode).toBe(201);
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/documents/${created.json().id}`, headers: { 'x-api-key': other.key } })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/events', headers: { 'x-api-key': other.key } })).statusCode).toBe(200);
    expect((await cancelDocument(t.app, other.key, created.json().id)).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200);

    // PostgreSQL ends the waiting sessions (as an operator or a failover would): a 503, never a 500.
    await t.db.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [await lockWaiters()]);
    for (const res of await Promise.all(waiting)) {
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.json()).toMatchObject({ code: 'SERVICE_UNAVAILABLE', detail: expect.stringMatching(/ended the session/) });
    }
  });

  it('logs each of those 503s once, at warn, without a stack', async () => {
    const waiting = cancelDocument(t.app, locked.key, lockedDocument, 'idem-terminated-once');
    await waitForLockWaiters(1);
    await t.db.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [await lockWaiters()]);
    const res = await waiting;
    expect(res.statusCode).toBe(503);
    const requestId = res.headers['x-request-id'] as string;
    const lines = t
      .logs()
      .split('\n')
      .filter((line) => line.includes(requestId))
      .map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
    expect(lines.filter((line) => /Database unavailable/.test(line.msg))).toEqual([expect.objectContaining({ level: 40, cause: 'session_ended' })]);
    expect(lines.map((line) => JSON.stringify(line)).join('\n')).not.toMatch(/stack|\bat .*\(/);
  });

  it('stays ready with every request connection waiting on the lock', async () => {
    const waiting = [1, 2, 3, 4].map(() => cancelDocument(t.app, locked.key, lockedDocument));
    await waitForLockWaiters(4);
    const ready = await t.app.inject({ method: 'GET', url: '/health/ready' });
    expect(ready.statusCode).toBe(200);
    await t.db.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [await lockWaiters()]);
    expect((await Promise.all(waiting)).map((res) => res.statusCode)).toEqual([503, 503, 503, 503]);
  });

  describe('another instance with short timeouts on the same database', () => {
    let short: TestApp;
    afterEach(() => short.close());

    it('gives up on the lock after DB_LOCK_TIMEOUT_MS with 503 and Retry-After, and changes nothing', async () => {
      short = await startTestApp({ databaseUrl: t.databaseUrl, env: { DB_LOCK_TIMEOUT_MS: '300' } });
      const res = await cancelDocument(short.app, locked.key, lockedDocument);
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.json().detail).toMatch(/Another transaction holds data this request needs/);
      expect((await t.db.query('SELECT status FROM documents WHERE id = $1', [lockedDocument])).rows[0].status).toBe('PENDING_PAYMENT');
    });

    it('ends a statement after DB_STATEMENT_TIMEOUT_MS with 503', async () => {
      short = await startTestApp({ databaseUrl: t.databaseUrl, env: { DB_STATEMENT_TIMEOUT_MS: '300', DB_LOCK_TIMEOUT_MS: '60000' } });
      const res = await cancelDocument(short.app, locked.key, lockedDocument);
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      // PostgreSQL stopped the statement itself, so the transaction is gone: here, and only here, nothing was saved.
      expect(res.json().detail).toBe('The database stopped a statement that ran past its time limit; nothing was saved, try again shortly');
    });
  });

  it('serves the row again once the peer is gone', async () => {
    peer.child.kill('SIGCONT');
    peer.child.kill('SIGKILL');
    await peer.exited;
    await waitFor(async () => (await cancelDocument(t.app, locked.key, lockedDocument)).statusCode === 200, 'the cancel to go through');
  });
});

describe('a PostgreSQL that stops answering', () => {
  let dataDir: string;
  let cluster: Awaited<ReturnType<typeof startClusterProcess>>;
  let t: TestApp;
  let frozen: number[] = [];

  beforeAll(async () => {
    // A cluster of this test's own: its server processes are what gets frozen.
    dataDir = await mkdtemp(join(tmpdir(), 'gateway-freeze-'));
    cluster = await startClusterProcess(dataDir, await freePort());
    t = await startTestApp({ databaseUrl: cluster.url, env: { DB_POOL_SIZE: '2', DB_STATEMENT_TIMEOUT_MS: '500' } });
  });
  afterAll(async () => {
    for (const pid of frozen) process.kill(pid, 'SIGCONT');
    await t.close();
    await cluster.stop();
    await removeDataDir(dataDir);
  });

  it('answers 503 within the statement timeout plus a margin instead of hanging, stays ready, and recovers', async () => {
    const source = await newSourceWithKey(t.app);
    const list = () => t.app.inject({ method: 'GET', url: '/api/v1/documents', headers: { 'x-api-key': source.key } });
    // Both pool connections open (held at once, so the pool must open two), so the next request is bound
    // to take a frozen one.
    const dataSource = t.app.get<DataSource>(getDataSourceToken());
    await Promise.all([dataSource.query('SELECT pg_sleep(0.2)'), dataSource.query('SELECT pg_sleep(0.2)')]);
    frozen = (await t.db.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tax-document-gateway'`)).rows.map(
      (row: { pid: number }) => row.pid,
    );
    expect(frozen).toHaveLength(2);
    // SIGSTOP: the server processes stay, their sockets stay open, nothing answers; the server cannot
    // enforce its own statement_timeout, so only the gateway's client-side bound ends the wait.
    for (const pid of frozen) process.kill(pid, 'SIGSTOP');

    const res = await list();
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code: 'SERVICE_UNAVAILABLE', detail: expect.stringMatching(/did not answer in time/) });
    expect((await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200);

    for (const pid of frozen) process.kill(pid, 'SIGCONT');
    frozen = [];
    await waitFor(async () => (await list()).statusCode === 200, 'requests to succeed again');
  });

  /** Both pool connections open and then frozen, so the next statement the gateway sends waits on one. */
  const freezePool = async () => {
    const dataSource = t.app.get<DataSource>(getDataSourceToken());
    const ours = async () =>
      (await t.db.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tax-document-gateway'`)).rows.map(
        (row: { pid: number }) => row.pid,
      );
    await waitFor(async () => {
      await Promise.all([dataSource.query('SELECT pg_sleep(0.2)'), dataSource.query('SELECT pg_sleep(0.2)')]);
      return (await ours()).length === 2;
    }, 'exactly the two pool connections');
    frozen = await ours();
    for (const pid of frozen) process.kill(pid, 'SIGSTOP');
  };
  const thaw = () => {
    for (const pid of frozen) process.kill(pid, 'SIGCONT');
    frozen = [];
  };

  it('tells a write cut off by the freeze that it may have been saved, and how to retry safely; the retry applies it once', async () => {
    const source = await newSourceWithKey(t.app);

    // The bank event's transaction goes in one round trip, COMMIT included: PostgreSQL may run it on waking.
    const eventId = `evt-frozen-${newIdempotencyKey()}`;
    const event = signedWebhook(TEST_WEBHOOK_SECRET, { eventId, eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: `PAY-FROZEN-${eventId}` });
    await freezePool();
    const cutEvent = await sendWebhook(t.app, event);
    thaw();
    expect([cutEvent.statusCode, cutEvent.json().detail]).toEqual([
      503,
      'The database did not answer in time; it may have been saved; sending the event again with the same eventId is safe',
    ]);
    const retried = await waitFor(async () => {
      const res = await sendWebhook(t.app, event);
      return res.statusCode === 200 ? res : undefined;
    }, 'the event to be taken after the thaw');
    expect(retried.statusCode).toBe(200);
    expect((await t.db.query('SELECT count(*)::int AS n FROM webhook_events WHERE event_id = $1', [eventId])).rows[0].n).toBe(1);

    const key = newIdempotencyKey();
    const body = documentBody(source.source);
    await freezePool();
    const cutCreate = await postDocument(t.app, source.key, body, key);
    thaw();
    expect([cutCreate.statusCode, cutCreate.json().detail]).toEqual([
      503,
      'The database did not answer in time; it may have been saved; retrying with the same X-Idempotency-Key is safe',
    ]);
    const created = await waitFor(async () => {
      const res = await postDocument(t.app, source.key, body, key);
      return res.statusCode === 201 ? res : undefined;
    }, 'the create to be answered after the thaw');
    expect((await t.db.query('SELECT id FROM documents WHERE source = $1 AND external_id = $2', [source.source, body.externalId])).rows).toEqual([
      { id: created.json().id },
    ]);

    // An administrator's change has no key to retry with: the answer says to look first.
    await freezePool();
    const cutAdmin = await t.app.inject({ method: 'POST', url: '/admin/api-keys', headers: adminHeaders, payload: { source: source.source, name: 'cut off' } });
    thaw();
    expect([cutAdmin.statusCode, cutAdmin.json().detail]).toEqual([
      503,
      'The database did not answer in time; the change may have been made; look before trying again',
    ]);
    expect(JSON.stringify(cutAdmin.json())).not.toMatch(/sk_tax_/);
  });
});

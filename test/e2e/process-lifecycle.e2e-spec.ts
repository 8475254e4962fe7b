import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort } from '../../src/database/embedded-postgres.js';
import { removeDataDir } from '../../src/database/embedded-postgres-layout.js';
import { createTestDatabase, dropTestDatabase } from '../support/database.js';
import { documentBody, newIdempotencyKey } from '../support/factories.js';
import { Spawned, startGateway, waitFor } from '../support/processes.js';
import { TEST_ADMIN_TOKEN } from '../support/test-app.js';

async function ready(port: number): Promise<boolean> {
  const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
  return res.status === 200;
}

function postmaster(dataDir: string): { pid: number; port: number } {
  const [pid, , , port] = readFileSync(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n');
  return { pid: Number(pid), port: Number(port) };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function embeddedClient(dataDir: string): Promise<Client> {
  const password = readFileSync(join(dataDir, 'pg-password'), 'utf8').trim();
  const client = new Client({ host: '127.0.0.1', port: postmaster(dataDir).port, user: 'postgres', password, database: 'gateway' });
  await client.connect();
  return client;
}

describe('the gateway process', () => {
  const running: Spawned[] = [];
  // Generated secrets go to DATA_DIR: a directory of the test's own unless the test names one, never the checkout.
  // Made when the tests run, not when the file is loaded: a run that skips them (-t) leaves nothing behind.
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'gateway-lifecycle-'));
  });
  afterAll(() => removeDataDir(scratch));
  const launch = (env: NodeJS.ProcessEnv, ownProcessGroup = false) => {
    const spawned = startGateway({ DATA_DIR: scratch, ...env }, ownProcessGroup);
    running.push(spawned);
    return spawned;
  };
  afterEach(() => {
    for (const p of running.splice(0)) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  });

  describe('configuration', () => {
    it('refuses to start on bad values, naming each variable and its rule and never echoing a secret', async () => {
      const gateway = launch({
        PORT: 'abc',
        WEBHOOK_TOLERANCE_SECONDS: '0',
        LOG_LEVEL: 'verbose',
        MIGRATIONS_RUN: 'maybe',
        BANK_WEBHOOK_SECRET: 'short-secret',
        DATABASE_URL: 'mysql://user:hunter2@localhost/db',
      });
      expect(await gateway.exited).toBe(78);
      const out = gateway.output();
      expect(out).toContain('Invalid configuration');
      expect(out).toContain('PORT must be an integer from 0 to 65535 (got "abc")');
      expect(out).toContain('WEBHOOK_TOLERANCE_SECONDS must be an integer from 1 to 3600 (got "0")');
      expect(out).toContain('LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent');
      expect(out).toContain('MIGRATIONS_RUN must be true or false');
      expect(out).toContain('BANK_WEBHOOK_SECRET must be at least 16 characters long');
      expect(out).toContain('DATABASE_URL must be a postgres:// or postgresql:// connection URL');
      expect(out).not.toContain('short-secret');
      expect(out).not.toContain('hunter2');
    });
  });

  describe('with DATABASE_URL', () => {
    let databaseUrl: string;
    beforeAll(async () => {
      databaseUrl = await createTestDatabase();
    });
    afterAll(() => dropTestDatabase(databaseUrl));

    it('starts on the given server and, on SIGTERM, lets in-flight database work commit before closing the pool', async () => {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      // The request below waits inside its transaction for as long as the test holds a lock: no timeout may end it first.
      const patient = { DB_LOCK_TIMEOUT_MS: '300000', DB_STATEMENT_TIMEOUT_MS: '300000', HTTP_REQUEST_TIMEOUT_MS: '300000' };
      const gateway = launch({ DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN: TEST_ADMIN_TOKEN, ...patient });
      await waitFor(() => ready(port), 'readiness');
      const issued = (await (
        await fetch(`${base}/admin/api-keys`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ source: 'shutdown-test' }),
        })
      ).json()) as { key: string };

      // Hold the request inside its transaction: its event insert waits for a lock the test holds.
      const db = new Client({ connectionString: databaseUrl });
      await db.connect();
      await db.query('SELECT pg_advisory_lock(4242, 1)');
      await db.query(`CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_advisory_xact_lock(4242, 1); RETURN NEW; END $$`);
      await db.query(`CREATE TRIGGER slow_insert BEFORE INSERT ON document_events FOR EACH ROW EXECUTE FUNCTION slow_insert()`);
      const body = documentBody('shutdown-test');
      const inFlight = fetch(`${base}/api/v1/documents`, {
        method: 'POST',
        headers: { 'x-api-key': issued.key, 'x-idempotency-key': newIdempotencyKey(), 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      await waitFor(
        async () =>
          (
            await db.query(
              `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = 4242 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
            )
          ).rowCount === 1,
        'the request in its transaction',
      );
      gateway.child.kill('SIGTERM');
      // Draining: new connections are refused, and the process waits for the request.
      await waitFor(
        () =>
          fetch(`${base}/health/live`).then(
            () => false,
            () => true,
          ),
        'new connections to be refused',
      );
      expect(gateway.child.exitCode).toBeNull();
      await db.query('SELECT pg_advisory_unlock(4242, 1)');

      expect((await inFlight).status).toBe(201);
      expect(await gateway.exited).toBe(0);
      expect(gateway.output()).toContain('Shutdown complete');
      const stored = await db.query('SELECT count(*)::int AS n FROM documents WHERE external_id = $1', [body.externalId]);
      expect(stored.rows[0].n).toBe(1);
      await db.end();
    });
    it('on SIGTERM answers readiness 503 at once and serves requests for SHUTDOWN_DELAY_SECONDS, then stops', async () => {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      // A delay long enough for the checks below on a busy machine; each is made once readiness says 503.
      const gateway = launch({ DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN: TEST_ADMIN_TOKEN, SHUTDOWN_DELAY_SECONDS: '5' });
      await waitFor(() => ready(port), 'readiness');
      const key = (await (
        await fetch(`${base}/admin/api-keys`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ source: 'drain-test' }),
        })
      ).json()) as { key: string };
      const signalledAt = performance.now();
      gateway.child.kill('SIGTERM');
      const readiness = await waitFor(async () => {
        const res = await fetch(`${base}/health/ready`);
        return res.status === 503 && res;
      }, 'readiness to answer 503');
      expect((await readiness.json()) as object).toMatchObject({ code: 'SERVICE_UNAVAILABLE', detail: expect.stringMatching(/shutting down/) });
      expect((await fetch(`${base}/health/live`)).status).toBe(200);
      // Requests still arrive (the load balancer has not noticed yet) and are served.
      for (let i = 0; i < 3; i += 1) expect((await fetch(`${base}/api/v1/me`, { headers: { 'x-api-key': key.key } })).status).toBe(200);
      expect(gateway.child.exitCode).toBeNull();
      expect(await gateway.exited).toBe(0);
      expect(performance.now() - signalledAt).toBeGreaterThanOrEqual(5000);
      expect(gateway.output()).toContain('not ready, still serving until the delay is over');
    });
  });

  describe('with the embedded PostgreSQL (no DATABASE_URL)', () => {
    let dataDir: string;
    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'gateway-embedded-'));
    });
    afterAll(() => removeDataDir(dataDir));

    it('starts a real cluster, keeps data across a restart and a SIGKILL, and stops the cluster on SIGTERM', async () => {
      const env = { DATABASE_URL: '', TEST_DATABASE_URL: '', DATA_DIR: dataDir, HOST: '127.0.0.1' };
      const port = await freePort();
      // What a first start killed while writing the cluster's password left: the next start makes one anew.
      await writeFile(join(dataDir, 'pg-password'), '');
      const first = launch({ ...env, PORT: String(port) });
      await waitFor(() => ready(port), 'first start');
      const cluster = postmaster(dataDir);
      expect(cluster.port).not.toBe(5432);

      const client = await embeddedClient(dataDir);
      await client.query('CREATE TABLE restart_marker (value text)');
      await client.query("INSERT INTO restart_marker VALUES ('kept')");
      await client.end();

      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      expect(alive(cluster.pid)).toBe(false);

      const second = launch({ ...env, PORT: String(port) });
      await waitFor(() => ready(port), 'restart');
      const again = await embeddedClient(dataDir);
      expect((await again.query('SELECT value FROM restart_marker')).rows).toEqual([{ value: 'kept' }]);
      await again.end();

      // A killed gateway leaves its cluster running; the next start adopts it instead of failing.
      second.child.kill('SIGKILL');
      await second.exited;
      const orphan = postmaster(dataDir);
      expect(alive(orphan.pid)).toBe(true);

      const third = launch({ ...env, PORT: String(port) });
      await waitFor(() => ready(port), 'start after SIGKILL');
      third.child.kill('SIGTERM');
      expect(await third.exited).toBe(0);
      expect(alive(orphan.pid)).toBe(false);
      expect(existsSync(join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
    });

    it('on Ctrl-C in a terminal (SIGINT to its whole process group) drains first, so the cluster outlives the last writes', async () => {
      const env = { DATABASE_URL: '', TEST_DATABASE_URL: '', DATA_DIR: dataDir, HOST: '127.0.0.1', ADMIN_TOKEN: TEST_ADMIN_TOKEN };
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const job = launch({ ...env, PORT: String(port) }, true);
      await waitFor(() => ready(port), 'start');
      const issued = await fetch(`${base}/admin/api-keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ source: 'ctrl-c-check' }),
      });
      const { id, key } = (await issued.json()) as { id: string; key: string };
      // Its last use is recorded in a batch that the shutdown flushes: that needs the cluster still up.
      expect((await fetch(`${base}/api/v1/me`, { headers: { 'x-api-key': key } })).status).toBe(200);
      const cluster = postmaster(dataDir);
      process.kill(-job.child.pid!, 'SIGINT');
      expect(await job.exited).toBe(0);
      expect(job.output()).toContain('Shutdown complete');
      expect(job.output()).not.toContain('Could not record key usage');
      expect(alive(cluster.pid)).toBe(false);

      const again = launch({ ...env, PORT: String(port) });
      await waitFor(() => ready(port), 'restart');
      const client = await embeddedClient(dataDir);
      const { rows } = await client.query('SELECT last_used_at FROM api_keys WHERE id = $1', [id]);
      await client.end();
      expect(rows[0].last_used_at).not.toBeNull();
      again.child.kill('SIGTERM');
      expect(await again.exited).toBe(0);
    });
  });
});

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort } from '../../src/database/embedded-postgres.js';
import { removeDataDir } from '../../src/database/embedded-postgres-layout.js';
import { advanceTransactionCounter } from '../../src/database/transaction-counter.js';
import { documentBody, feedOnceReady, IssuedKey, newIdempotencyKey, newSourceWithKey } from '../support/factories.js';
import { spawnNode, startClusterProcess, startGateway, waitFor, ROOT } from '../support/processes.js';
import { startTestApp, TEST_ADMIN_TOKEN, TEST_WEBHOOK_SECRET, TestApp } from '../support/test-app.js';

/** pg_dump and pg_restore of the highest PostgreSQL release installed, if it can dump a server of `serverMajor`. */
function dumpTools(serverMajor: number): { pgDump: string; pgRestore: string; major: number } | null {
  const dirs = (process.env.PATH ?? '').split(':');
  if (existsSync('/usr/lib/postgresql')) dirs.push(...readdirSync('/usr/lib/postgresql').map((version) => `/usr/lib/postgresql/${version}/bin`));
  const found = dirs
    .filter((dir) => existsSync(join(dir, 'pg_dump')) && existsSync(join(dir, 'pg_restore')))
    .map((dir) => ({
      pgDump: join(dir, 'pg_dump'),
      pgRestore: join(dir, 'pg_restore'),
      major: Number(/(\d+)/.exec(execFileSync(join(dir, 'pg_dump'), ['--version'], { encoding: 'utf8' }))![1]),
    }))
    .sort((x, y) => y.major - x.major);
  return found[0] && found[0].major >= serverMajor ? found[0] : null;
}

/** A request to the gateway process on `port`, the answer's status, headers and JSON body. */
async function call(port: number, method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

/**
 * The restore drill of docs/operations.md (Backup and restore), the hard case: a logical dump restored into
 * a new cluster, whose transaction counter starts far below the one the dump came from. The gateway
 * refuses to start there until `migration-cli advance-xid` has moved the counter on; then exactly-once
 * survives (a retried request replays its stored answer), keys work, and a client's feed cursor from
 * before the dump sees what is written after the restore, once.
 */
describe('backup and restore into a new cluster', () => {
  let a: TestApp | undefined;
  let cluster: Awaited<ReturnType<typeof startClusterProcess>> | undefined;
  // Made when the tests run, not when the file is loaded: a run that skips them (-t) leaves nothing behind.
  let scratch: string;
  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'gateway-restore-'));
  });
  const gateways: Array<ReturnType<typeof startGateway>> = [];

  afterAll(async () => {
    for (const gateway of gateways) if (gateway.child.exitCode === null) gateway.child.kill('SIGKILL');
    await cluster?.stop();
    await a?.close();
    // As root the restored cluster lives under /var/lib/tax-document-gateway, linked from scratch/cluster: it goes too.
    if (scratch) await removeDataDir(join(scratch, 'cluster'));
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('restores documents, keys and stored answers, refuses to start until the counter is advanced, then replays and feeds on', async () => {
    const server = new Client({ connectionString: process.env.TEST_SERVER_URL });
    await server.connect();
    const serverMajor = Number((await server.query('SHOW server_version_num')).rows[0].server_version_num) / 10000;
    await server.end();
    const tools = dumpTools(Math.floor(serverMajor));
    if (!tools) {
      process.stderr.write(
        `\n*** SKIPPING the restore drill: no pg_dump of PostgreSQL ${Math.floor(serverMajor)} or later is installed to dump the test server. ***\n\n`,
      );
      return;
    }

    // The source: a gateway with a key, documents and a cancellation made with idempotency keys, and their
    // feed. Its server's counter is taken well past where a new cluster's starts, as any server in use is.
    await advanceTransactionCounter(process.env.TEST_SERVER_URL!, 50_000n, () => undefined);
    a = await startTestApp();
    const key: IssuedKey = await newSourceWithKey(a.app);
    const requests: Array<{ url: string; idempotencyKey: string; body?: unknown; status: number; answer: string; location?: string }> = [];
    for (let i = 0; i < 3; i++) {
      const idempotencyKey = newIdempotencyKey();
      const body = documentBody(key.source);
      const res = await a.app.inject({
        method: 'POST',
        url: '/api/v1/documents',
        headers: { 'x-api-key': key.key, 'x-idempotency-key': idempotencyKey },
        payload: body,
      });
      expect(res.statusCode).toBe(201);
      requests.push({ url: '/api/v1/documents', idempotencyKey, body, status: 201, answer: res.body, location: res.headers.location });
    }
    const cancelKey = newIdempotencyKey();
    const cancelUrl = `/api/v1/documents/${JSON.parse(requests[0].answer).id}/cancel`;
    const cancelled = await a.app.inject({ method: 'POST', url: cancelUrl, headers: { 'x-api-key': key.key, 'x-idempotency-key': cancelKey } });
    expect(cancelled.statusCode).toBe(200);
    requests.push({ url: cancelUrl, idempotencyKey: cancelKey, status: 200, answer: cancelled.body });
    const before = await feedOnceReady(a.app, key.key, (events) => events.length === 4 && events, 'the 4 events in the feed');
    const read = (await a.app.inject({ method: 'GET', url: '/api/v1/events?limit=100', headers: { 'x-api-key': key.key } })).json();
    expect(read.data.map((e: { id: string }) => e.id)).toEqual(before.map((e) => e.id));
    const cursor = read.nextCursor as string;

    // pg_dump, a new cluster, pg_restore (the commands of docs/operations.md).
    const dump = join(scratch, 'tdg.dump');
    execFileSync(tools.pgDump, ['--format=custom', `--file=${dump}`, a.databaseUrl], { stdio: 'pipe' });
    cluster = await startClusterProcess(join(scratch, 'cluster'));
    const admin = new Client({ connectionString: cluster.url });
    await admin.connect();
    await admin.query('CREATE DATABASE restored');
    await admin.end();
    const restoredUrl = Object.assign(new URL(cluster.url), { pathname: '/restored' }).toString();
    execFileSync(tools.pgRestore, ['--no-owner', '--no-privileges', '--exit-on-error', '--single-transaction', `--dbname=${restoredUrl}`, dump], {
      stdio: 'pipe',
    });

    const env = { DATABASE_URL: restoredUrl, HOST: '127.0.0.1', ADMIN_TOKEN: TEST_ADMIN_TOKEN, BANK_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET, DATA_DIR: scratch };
    // Started at once, the gateway refuses: new events would sort before the restored ones.
    const refused = startGateway({ ...env, PORT: String(await freePort()) });
    gateways.push(refused);
    expect(await refused.exited).toBe(1);
    expect(refused.output()).toMatch(/restored from a logical dump into another cluster/);
    expect(refused.output()).toMatch(/migration-cli\.js advance-xid/);

    const advance = spawnNode([join(ROOT, 'dist', 'database', 'migration-cli.js'), 'advance-xid'], env);
    expect(await advance.closed).toBe(0);
    expect(advance.stdout()).toMatch(/pg_resetwal -e \d+/);
    expect(advance.stdout()).toMatch(/Done: this cluster's next transaction is \d+/);

    const port = await freePort();
    const b = startGateway({ ...env, PORT: String(port) });
    gateways.push(b);
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health/ready`)).status === 200, 'the restored gateway to be ready');
    const auth = { 'x-api-key': key.key };

    // Exactly-once survives: every retried request replays its stored answer, and nothing runs again.
    for (const request of requests) {
      const retried = await call(port, 'POST', request.url, { ...auth, 'x-idempotency-key': request.idempotencyKey }, request.body);
      expect({ status: retried.status, body: retried.body, replayed: retried.headers.get('idempotent-replayed') }).toEqual({
        status: request.status,
        body: request.answer,
        replayed: 'true',
      });
      if (request.location) expect(retried.headers.get('location')).toBe(request.location);
    }
    expect((await call(port, 'GET', '/api/v1/me', auth)).status).toBe(200);
    expect(JSON.parse((await call(port, 'GET', '/api/v1/documents?limit=100', auth)).body).data).toHaveLength(3);

    // The feed continues: from the client's last cursor, what is written after the restore, and nothing twice.
    const created = await call(port, 'POST', '/api/v1/documents', { ...auth, 'x-idempotency-key': newIdempotencyKey() }, documentBody(key.source));
    expect(created.status).toBe(201);
    const after = await waitFor(async () => {
      const page = JSON.parse((await call(port, 'GET', `/api/v1/events?after=${cursor}`, auth)).body);
      return page.data.length > 0 && page;
    }, 'the new event after the old cursor');
    expect(after.data.map((e: { type: string; documentId: string }) => [e.type, e.documentId])).toEqual([['document.created', JSON.parse(created.body).id]]);
    expect(before.map((e) => e.id)).not.toContain(after.data[0].id);
    const whole = JSON.parse((await call(port, 'GET', '/api/v1/events?limit=100', auth)).body).data.map((e: { id: string }) => e.id);
    expect(whole).toEqual([...before.map((e) => e.id), after.data[0].id]);
  });
});

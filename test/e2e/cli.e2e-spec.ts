import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { cp, mkdtemp, realpath, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Notification } from 'pg';
import { hashApiKey } from '../../src/auth/api-key-format.js';
import { KeyUsageRecorder } from '../../src/auth/key-usage.recorder.js';
import { freePort } from '../../src/database/embedded-postgres.js';
import { removeDataDir } from '../../src/database/embedded-postgres-layout.js';
import { createTestDatabase, dropTestDatabase } from '../support/database.js';
import { adminHeaders, documentBody, newIdempotencyKey, postDocument, uniqueSource } from '../support/factories.js';
import { ROOT, Spawned, spawnNode, startGateway, waitFor } from '../support/processes.js';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from '../support/test-app.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

const KEY = /sk_tax_[0-9A-Za-z]{43}/;
const TOKEN = /adm_tax_[0-9A-Za-z]{32,}/;
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** Nothing listening here: a command that reaches for the database fails with exit code 5. */
const UNREACHABLE_DATABASE = 'postgres://nobody:nothing@127.0.0.1:1/none';
/** The audit actor of everything the CLI changes. */
const CLI_ACTOR = { type: 'cli', adminId: null, email: null };

interface Run {
  code: number | string;
  stdout: string;
  stderr: string;
}

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  const run = spawnNode([join(ROOT, 'dist', 'cli.js'), ...args], env);
  const code = await run.closed;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

function created(stdout: string): { key: string; id: string } {
  const key = KEY.exec(stdout)?.[0];
  const id = new RegExp(`id\\s+(${UUID})`).exec(stdout)?.[1];
  if (!key || !id) throw new Error(`no key and id in:\n${stdout}`);
  return { key, id };
}

/** Neither a stack trace nor SQL in what a person or a script reads. */
function expectNoInternals(text: string) {
  expect(text).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
  expect(text).not.toMatch(/\b(SELECT|INSERT INTO|UPDATE \w+ SET)\b/);
}

describe('operator CLI (node dist/cli.js)', () => {
  describe('with a reader that stops early, as `tdg --help | head -3` is', () => {
    /** `tdg …` whose stdout its reader has closed before the CLI writes to it (a CLI takes far longer to start). */
    const withClosedStdout = async (args: string[]) => {
      const run = spawnNode([join(ROOT, 'dist', 'cli.js'), ...args], { DATABASE_URL: UNREACHABLE_DATABASE });
      run.child.stdout!.destroy();
      return { code: await run.closed, stderr: run.stderr() };
    };

    it('ends quietly with status 0 after help, and with its usual status otherwise; never an unhandled EPIPE', async () => {
      expect(await withClosedStdout(['--help'])).toEqual({ code: 0, stderr: '' });
      expect(await withClosedStdout(['admins', 'tokens', 'issue', '--help'])).toEqual({ code: 0, stderr: '' });
      const dir = await mkdtemp(join(tmpdir(), 'tdg-closed-stdout-'));
      try {
        expect(await withClosedStdout(['clusters', 'list', '--dir', dir])).toEqual({ code: 0, stderr: '' });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
      // A failure still says so on stderr, with its own status.
      const unknown = await withClosedStdout(['nonsense']);
      expect(unknown).toEqual({ code: 2, stderr: expect.stringMatching(/^error: unknown command 'nonsense'/) });
      const unreachable = await withClosedStdout(['keys', 'list']);
      expect(unreachable.code).toBe(5);
      for (const run of [unknown, unreachable]) expect(run.stderr).not.toMatch(/EPIPE|Unhandled/);
    });
  });

  describe('with DATABASE_URL', () => {
    let databaseUrl: string;
    let t: TestApp;
    let receiver: WebhookReceiver;
    let issued: { key: string; id: string };
    const env = () => ({ DATABASE_URL: databaseUrl });
    /** A --json run that succeeded: its stdout is one JSON document, and stderr says nothing. */
    const json = async (args: string[]) => {
      const run = await cli([...args, '--json'], env());
      expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: '' });
      return JSON.parse(run.stdout);
    };
    /** A --json run that failed: its exit code, and the problem+json object on stderr (stdout empty). */
    const failing = async (args: string[]) => {
      const run = await cli([...args, '--json'], env());
      expect(run.stdout).toBe('');
      expectNoInternals(run.stderr);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      return { code: run.code, problem: JSON.parse(run.stderr) };
    };
    /** What the admin REST API answers: the CLI's --json must be the same. */
    const rest = async (url: string) => {
      const res = await t.app.inject({ method: 'GET', url, headers: adminHeaders });
      expect([url, res.statusCode]).toEqual([url, 200]);
      return res.json();
    };
    const me = (key: string) => t.app.inject({ method: 'GET', url: '/api/v1/me', headers: { 'x-api-key': key } });
    const cliEntries = async () => ((await rest('/admin/audit-log?limit=200')).data as Array<Record<string, unknown>>).filter((e) => e.remoteAddress === 'cli');

    beforeAll(async () => {
      databaseUrl = await createTestDatabase();
      receiver = await new WebhookReceiver().start();
    });
    afterAll(async () => {
      await receiver?.stop();
      await t?.close();
      await dropTestDatabase(databaseUrl);
    });

    describe('keys', () => {
      it('issues a key on a database that was never migrated, printing it once, and the key works against the API', async () => {
        const run = await cli(['keys', 'issue', '--source', 'cli-e2e', '--name', 'CLI test'], env());
        expect(run.code).toBe(0);
        issued = created(run.stdout);
        expect(run.stdout).toContain('Issued an API key for source cli-e2e.');
        expect(run.stdout).toContain('shown now and never again');
        expect(run.stdout.match(new RegExp(KEY, 'g'))).toHaveLength(1);
        // The schema came from the migrations, run by the CLI; that note is a diagnostic, not output.
        expect(run.stderr).toMatch(/Applied migrations: \w+/);
        expect(run.stdout).not.toMatch(/Applied migrations|^\{|\[Nest\]|query:/m);

        t = await startTestApp({
          databaseUrl,
          env: { OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true', OUTBOUND_WEBHOOKS_RETRY_SCHEDULE: '1h', OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS: '2' },
        });
        const res = await me(issued.key);
        expect(res.statusCode).toBe(200);
        expect(res.json()).toMatchObject({ source: 'cli-e2e', keyId: issued.id, keyPrefix: issued.key.slice(0, 12) });
      });

      it('issue --json prints the REST API key object with the key, and nothing else', async () => {
        const body = await json(['keys', 'issue', '--source', 'cli-json', '--name', 'scripted', '--expires-at', '2031-01-01T00:00:00Z']);
        expect(Object.keys(body).sort()).toEqual([
          'createdAt',
          'expiresAt',
          'id',
          'key',
          'last4',
          'lastUsedAt',
          'name',
          'prefix',
          'revokedAt',
          'source',
          'status',
        ]);
        expect(body).toEqual({ ...(await rest(`/admin/api-keys/${body.id}`)), key: expect.stringMatching(KEY) });
        expect(body).toMatchObject({ source: 'cli-json', name: 'scripted', expiresAt: '2031-01-01T00:00:00.000Z', status: 'ACTIVE' });
        expect((await me(body.key)).statusCode).toBe(200);
      });

      it('lists keys as a table, never with the key or its hash, and filters by source', async () => {
        const other = created((await cli(['keys', 'issue', '--source', 'cli-other'], env())).stdout);

        const all = await cli(['keys', 'list'], env());
        expect(all.code).toBe(0);
        expect(all.stdout.split('\n')[0]).toMatch(/^ID\s+SOURCE\s+STATUS\s+KEY\s+NAME\s+CREATED\s+EXPIRES\s+LAST USED$/);
        const line = all.stdout.split('\n').find((l) => l.startsWith(issued.id));
        expect(line).toMatch(new RegExp(`cli-e2e\\s+ACTIVE\\s+${issued.key.slice(0, 12)}…${issued.key.slice(-4)}\\s+CLI test\\s`));
        expect(all.stdout).toContain(other.id);
        for (const { key } of [issued, other]) {
          expect(all.stdout).not.toContain(key);
          expect(all.stdout).not.toContain(hashApiKey(key));
        }
        expect(all.stdout).not.toMatch(/[0-9a-f]{64}/);

        const filtered = await cli(['keys', 'list', '--source', 'cli-other'], env());
        expect(filtered.code).toBe(0);
        expect(filtered.stdout).toContain(other.id);
        expect(filtered.stdout).not.toContain(issued.id);
        expect((await cli(['keys', 'list', '--source', 'nobody-here'], env())).stdout).toBe('No API keys for source nobody-here.\n');
      });

      it('list --json is the REST API page, and pages with --limit and --cursor, or --all', async () => {
        const source = uniqueSource('cli-pages');
        for (let i = 0; i < 3; i++) await json(['keys', 'issue', '--source', source, '--name', `k${i}`]);
        const page = await json(['keys', 'list', '--source', source]);
        expect(page).toEqual(await rest(`/admin/api-keys?source=${source}`));
        expect(page.data.map((k: { name: string }) => k.name)).toEqual(['k2', 'k1', 'k0']);
        expect(JSON.stringify(page)).not.toMatch(/sk_tax_[0-9A-Za-z]{20}/);

        const first = await json(['keys', 'list', '--source', source, '--limit', '2']);
        expect(first).toEqual(await rest(`/admin/api-keys?source=${source}&limit=2`));
        expect(first.nextCursor).toEqual(expect.any(String));
        const second = await json(['keys', 'list', '--source', source, '--limit', '2', '--cursor', first.nextCursor]);
        expect(second).toEqual({ data: [page.data[2]], nextCursor: null });
        expect(await json(['keys', 'list', '--source', source, '--limit', '1', '--all'])).toEqual(page);

        const human = await cli(['keys', 'list', '--source', source, '--limit', '2'], env());
        expect(human.stderr).toContain(`More: the same command with --cursor ${first.nextCursor}, or --all.`);
      });

      it('rotate prints the successor once; the old key keeps working for the grace period, then stops', async () => {
        const old = await json(['keys', 'issue', '--source', uniqueSource('cli-rot'), '--name', 'to rotate']);
        // An hour of grace: the old key works on, however long this machine takes to get to the check.
        const successor = await json(['keys', 'rotate', old.id, '--grace-period-seconds', '3600']);
        expect(successor).toEqual({ ...(await rest(`/admin/api-keys/${successor.id}`)), key: expect.stringMatching(KEY) });
        expect(successor).toMatchObject({ source: old.source, name: 'to rotate', status: 'ACTIVE' });
        expect(successor.id).not.toBe(old.id);
        expect((await me(successor.key)).statusCode).toBe(200);
        expect((await me(old.key)).statusCode).toBe(200);
        const grace = Date.parse((await rest(`/admin/api-keys/${old.id}`)).revokedAt) - Date.parse(successor.createdAt);
        expect(grace).toBeGreaterThanOrEqual(3600_000);
        expect(grace).toBeLessThan(3600_000 + 60_000);

        // A key rotated with a grace period is listed as active until the period ends.
        const graced = await json(['keys', 'issue', '--source', old.source]);
        const gracedSuccessor = await json(['keys', 'rotate', graced.id, '--grace-period-seconds', '3600']);
        const revokedAt = (await rest(`/admin/api-keys/${graced.id}`)).revokedAt as string;
        const listed = await cli(['keys', 'list', '--source', old.source], env());
        expect(listed.stdout).toMatch(new RegExp(`^${graced.id}\\s+${old.source}\\s+ACTIVE until ${revokedAt.replace(/\.\d{3}Z$/, 'Z')}\\s`, 'm'));
        expect(listed.stdout).toMatch(new RegExp(`^${gracedSuccessor.id}\\s+${old.source}\\s+ACTIVE\\s+sk_tax_`, 'm'));

        // Two seconds of grace: the key stops, and not before the end the rotation set.
        const next = await json(['keys', 'rotate', successor.id, '--grace-period-seconds', '2']);
        const end = Date.parse((await rest(`/admin/api-keys/${successor.id}`)).revokedAt);
        const stoppedBy = await waitFor(async () => (await me(successor.key)).statusCode === 401 && Date.now(), 'the rotated key to stop');
        expect(stoppedBy).toBeGreaterThanOrEqual(end);
        expect((await me(next.key)).statusCode).toBe(200);

        const human = await cli(['keys', 'rotate', next.id], env());
        expect(human.code).toBe(0);
        expect(human.stdout).toMatch(new RegExp(`^Rotated API key ${next.id} \\(source ${old.source}\\)\\. The old key has stopped working\\.`));
        expect(human.stdout.match(new RegExp(KEY, 'g'))).toHaveLength(1);
        expect((await me(next.key)).statusCode).toBe(401);

        const again = await failing(['keys', 'rotate', next.id]);
        expect(again).toEqual({
          code: 4,
          problem: { type: 'about:blank', title: 'Conflict', status: 409, code: 'INVALID_STATE_TRANSITION', detail: expect.any(String) },
        });
      });

      it('revokes a key: the very next request with it gets 401; a second revoke says it was revoked before', async () => {
        expect((await me(issued.key)).statusCode).toBe(200);
        // lastUsedAt is written in batches; written now, the CLI and the REST API below read the same row.
        await t.app.get(KeyUsageRecorder).flush();
        const run = await cli(['keys', 'revoke', issued.id], env());
        expect(run.code).toBe(0);
        expect(run.stdout).toContain(`Revoked API key ${issued.id} (cli-e2e`);
        expect((await me(issued.key)).statusCode).toBe(401);
        expect((await cli(['keys', 'list', '--source', 'cli-e2e'], env())).stdout).toMatch(new RegExp(`${issued.id}\\s+cli-e2e\\s+REVOKED`));

        const again = await json(['keys', 'revoke', issued.id]);
        expect(again).toEqual(await rest(`/admin/api-keys/${issued.id}`));
        expect(again.status).toBe('REVOKED');
        expect((await cli(['keys', 'revoke', issued.id], env())).stdout).toContain('was already revoked at');
      });

      it('keeps the names of the first CLI (api-keys create) for the scripts that use them', async () => {
        const run = await cli(['api-keys', 'create', '--source', 'cli-legacy'], env());
        expect(run.code).toBe(0);
        expect((await me(created(run.stdout).key)).statusCode).toBe(200);
      });
    });

    describe('administrators and their tokens', () => {
      it('creates, lists and updates administrators, answering as the REST API does', async () => {
        const email = `${uniqueSource('cli-ada')}@example.com`;
        const admin = await json(['admins', 'create', '--email', email, '--role', 'operator', '--name', 'Ada']);
        expect(admin).toEqual({
          id: expect.stringMatching(UUID),
          email,
          name: 'Ada',
          role: 'operator',
          disabledAt: null,
          createdAt: expect.any(String),
          lastSeenAt: null,
        });
        expect(await rest(`/admin/admins/${admin.id}`)).toEqual(admin);

        expect(await json(['admins', 'list'])).toEqual(await rest('/admin/admins'));

        const changed = await json(['admins', 'update', admin.id, '--role', 'viewer', '--no-name']);
        expect(changed).toEqual({ ...admin, role: 'viewer', name: null });
        const disabled = await json(['admins', 'update', admin.id, '--disable']);
        expect(disabled.disabledAt).toEqual(expect.any(String));
        expect(await rest(`/admin/admins/${admin.id}`)).toEqual(disabled);
        expect((await json(['admins', 'update', admin.id, '--enable'])).disabledAt).toBeNull();

        const human = await cli(['admins', 'list'], env());
        expect(human.stdout.split('\n')[0]).toMatch(/^ID\s+EMAIL\s+ROLE\s+STATUS\s+NAME\s+CREATED\s+LAST SEEN$/);
        expect(human.stdout).toMatch(new RegExp(`${admin.id}\\s+${email}\\s+viewer\\s+enabled\\s+-\\s`));

        const duplicate = await failing(['admins', 'create', '--email', email.toUpperCase(), '--role', 'admin']);
        expect(duplicate).toEqual({ code: 4, problem: expect.objectContaining({ status: 409, code: 'DUPLICATE_ADMIN' }) });
        expect(await failing(['admins', 'update', randomUUID(), '--enable'])).toEqual({
          code: 3,
          problem: expect.objectContaining({ status: 404, code: 'NOT_FOUND' }),
        });
      });

      it("issues a personal token that works on the admin API, lists the admin's tokens and revokes one", async () => {
        const admin = await json(['admins', 'create', '--email', `${uniqueSource('cli-tok')}@example.com`, '--role', 'admin']);
        const token = await json(['admins', 'tokens', 'issue', admin.id, '--name', 'laptop']);
        expect(token).toEqual({
          id: expect.stringMatching(UUID),
          adminId: admin.id,
          name: 'laptop',
          prefix: token.token.slice(0, 12),
          last4: token.token.slice(-4),
          createdAt: expect.any(String),
          expiresAt: null,
          revokedAt: null,
          lastUsedAt: null,
          token: expect.stringMatching(TOKEN),
        });
        const asToken = () => t.app.inject({ method: 'GET', url: '/admin/me', headers: { authorization: `Bearer ${token.token}` } });
        expect((await asToken()).json()).toEqual({ actor: { type: 'token', adminId: admin.id, email: admin.email }, role: 'admin' });

        const listed = await json(['admins', 'tokens', 'list', admin.id]);
        expect(listed).toEqual(await rest(`/admin/admins/${admin.id}/tokens`));
        expect(Object.keys(listed)).toEqual(['data']);
        expect(JSON.stringify(listed)).not.toContain(token.token);

        const human = await cli(['admins', 'tokens', 'issue', admin.id], env());
        expect(human.code).toBe(0);
        expect(human.stdout.match(new RegExp(TOKEN, 'g'))).toHaveLength(1);
        expect(human.stdout).toContain('This token is shown now and never again');

        const revoked = await json(['admins', 'tokens', 'revoke', token.id]);
        expect(revoked).toMatchObject({ id: token.id, revokedAt: expect.any(String) });
        expect((await asToken()).statusCode).toBe(401);
        expect(await failing(['admins', 'tokens', 'revoke', randomUUID()])).toEqual({ code: 3, problem: expect.objectContaining({ code: 'NOT_FOUND' }) });
      });
    });

    describe("client applications' push endpoints and deliveries", () => {
      async function endpointOf(source: string) {
        const key = await json(['keys', 'issue', '--source', source]);
        const res = await t.app.inject({
          method: 'POST',
          url: '/api/v1/webhook-endpoints',
          headers: { 'x-api-key': key.key, 'x-idempotency-key': newIdempotencyKey() },
          payload: { url: receiver.url },
        });
        expect(res.statusCode).toBe(201);
        return { key: key.key as string, endpoint: res.json<{ id: string; secret: string }>() };
      }

      it('lists endpoints, disables one for the client for good (disabledReason "admin") and enables it again', async () => {
        const source = uniqueSource('cli-ep');
        const { key, endpoint } = await endpointOf(source);
        const listed = await json(['endpoints', 'list', '--source', source]);
        expect(listed).toEqual(await rest(`/admin/webhook-endpoints?source=${source}`));
        expect(listed.data).toEqual([expect.objectContaining({ id: endpoint.id, source, enabled: true, disabledReason: null })]);
        expect(JSON.stringify(listed)).not.toContain(endpoint.secret);

        const stopped = await json(['endpoints', 'disable', endpoint.id]);
        expect(stopped).toMatchObject({ id: endpoint.id, source, enabled: false, disabledReason: 'admin' });
        const client = (method: 'GET' | 'PATCH', payload?: object) =>
          t.app.inject({ method, url: `/api/v1/webhook-endpoints/${endpoint.id}`, headers: { 'x-api-key': key }, payload });
        expect((await client('GET')).json()).toMatchObject({ enabled: false, disabledReason: 'admin' });
        expect((await client('PATCH', { enabled: true })).statusCode).toBe(409);

        const human = await cli(['endpoints', 'list', '--source', source], env());
        expect(human.stdout).toMatch(new RegExp(`${endpoint.id}\\s+${source}\\s+disabled \\(admin\\)\\s+http://127\\.0\\.0\\.1`));

        const resumed = await json(['endpoints', 'enable', endpoint.id]);
        expect(resumed).toMatchObject({ id: endpoint.id, enabled: true, disabledReason: null });
        expect((await client('GET')).json()).toMatchObject({ enabled: true, disabledReason: null });
        expect(await failing(['endpoints', 'disable', randomUUID()])).toEqual({ code: 3, problem: expect.objectContaining({ code: 'NOT_FOUND' }) });
      });

      it("retries a failing delivery: the gateway's worker is told at once and delivers it", async () => {
        const source = uniqueSource('cli-dl');
        const { key } = await endpointOf(source);
        // The first attempt fails (this is the one test that makes deliveries); the retry schedule (1h) would not try again during the test.
        receiver.respond = (_message, index) => ({ status: index === 0 ? 500 : 204 });
        const created = await postDocument(t.app, key, documentBody(source));
        expect(created.statusCode).toBe(201);
        const documentId = created.json().id as string;

        const failingNow = await waitFor(async () => {
          const page = await json(['deliveries', 'list', '--attention', '--source', source]);
          return page.data[0];
        }, 'a delivery that failed once');
        expect(failingNow).toMatchObject({ status: 'pending', attempts: 1, lastResponseStatus: 500, source, documentId, eventType: 'document.created' });
        expect(await json(['deliveries', 'list', '--source', source, '--document-id', documentId])).toEqual(
          await rest(`/admin/outbound-deliveries?source=${source}&documentId=${documentId}`),
        );

        const listener = new Client({ connectionString: databaseUrl });
        await listener.connect();
        const heard: Notification[] = [];
        listener.on('notification', (n) => heard.push(n));
        await listener.query('LISTEN outbound_deliveries');
        try {
          const retried = await json(['deliveries', 'retry', failingNow.id]);
          expect(retried).toMatchObject({ id: failingNow.id, status: 'pending', source, documentId, nextAttemptAt: expect.any(String) });
          await waitFor(async () => heard.some((n) => n.payload === 'cli'), "the CLI's NOTIFY");
        } finally {
          await listener.end();
        }
        const delivered = await waitFor(async () => {
          const [delivery] = (await json(['deliveries', 'list', '--source', source])).data;
          return delivery.status === 'succeeded' && delivery;
        }, 'the retried delivery to succeed');
        expect(delivered).toMatchObject({ id: failingNow.id, attempts: 2, lastResponseStatus: 204 });

        const human = await cli(['deliveries', 'list', '--source', source], env());
        expect(human.stdout.split('\n')[1]).toMatch(new RegExp(`^${failingNow.id}\\s+${source}\\s+succeeded\\s+document\\.created\\s+2\\s`));
        expect(await failing(['deliveries', 'retry', failingNow.id])).toEqual({
          code: 4,
          problem: expect.objectContaining({ code: 'INVALID_STATE_TRANSITION' }),
        });
        expect(await failing(['deliveries', 'retry', '999999999'])).toEqual({ code: 3, problem: expect.objectContaining({ code: 'NOT_FOUND' }) });
      });
    });

    it('writes the same audit entries as the REST API, with the actor type "cli" and the address "cli"', async () => {
      const entries = await cliEntries();
      const actions = new Set(entries.map((e) => e.action));
      for (const action of [
        'api_key.created',
        'api_key.rotated',
        'api_key.revoked',
        'admin.created',
        'admin.updated',
        'admin_token.created',
        'admin_token.revoked',
        'webhook_endpoint.disabled',
        'webhook_endpoint.enabled',
        'outbound_delivery.retried',
      ]) {
        expect([action, actions.has(action)]).toEqual([action, true]);
      }
      for (const entry of entries) expect(entry.actor).toEqual(CLI_ACTOR);
      const ofIssued = entries.filter((e) => e.keyId === issued.id);
      expect(ofIssued.map((e) => [e.action, e.source])).toEqual([
        ['api_key.revoked', 'cli-e2e'],
        ['api_key.revoked', 'cli-e2e'],
        ['api_key.revoked', 'cli-e2e'],
        ['api_key.created', 'cli-e2e'],
      ]);
    });

    it('exits 2 for a bad command line before touching the database: a line and a hint, or problem+json with --json', async () => {
      const cases: [string[], RegExp][] = [
        [[], /^error: no command given\nUsage: tdg /],
        [['frobnicate'], /^error: unknown command 'frobnicate'\n/],
        [['keys'], /^error: tdg keys needs a command\nUsage: tdg keys\|api-keys/],
        [['keys', 'issue'], /^error: required option '--source <source>' not specified\nRun 'tdg keys issue --help' for usage\.\n$/],
        [
          ['keys', 'issue', '--source', 'Not A Source!', '--expires-at', 'next week'],
          /^error: --source must be 2-63 characters[^\n]*; --expires-at must be an ISO 8601 date-time\n/,
        ],
        [['keys', 'list', '--bogus'], /^error: unknown option '--bogus'\n/],
        [['keys', 'rotate', 'x', '--grace-period-seconds', '90000'], /^error: --grace-period-seconds must not be greater than 86400\n/],
        [['admins', 'update', randomUUID()], /^error: nothing to change/],
      ];
      const runs = await Promise.all(cases.map(([args]) => cli(args, { DATABASE_URL: UNREACHABLE_DATABASE })));
      runs.forEach((run, i) => {
        const [args, message] = cases[i];
        expect({ args, code: run.code, message: message.test(run.stderr), stdout: run.stdout }).toEqual({ args, code: 2, message: true, stdout: '' });
        expect(run.stderr).not.toContain('Using PostgreSQL');
      });

      const scripted = await cli(['keys', 'issue', '--source', 'Not A Source!', '--json'], { DATABASE_URL: UNREACHABLE_DATABASE });
      expect(scripted.code).toBe(2);
      expect(scripted.stdout).toBe('');
      expect(JSON.parse(scripted.stderr)).toEqual({
        type: 'about:blank',
        title: 'Unprocessable Content',
        status: 422,
        code: 'VALIDATION_ERROR',
        detail: 'The command line is not valid',
        errors: [{ field: '--source', message: 'must be 2-63 characters of a-z, 0-9 and -, starting with a letter or digit' }],
      });
      const unknown = await cli(['keys', 'list', '--bogus', '--json'], { DATABASE_URL: UNREACHABLE_DATABASE });
      expect([unknown.code, JSON.parse(unknown.stderr).detail]).toEqual([2, "unknown option '--bogus'"]);
    });

    it('exits 2 for an expiry in the past, a rule the service itself enforces', async () => {
      const run = await cli(['keys', 'issue', '--source', 'cli-e2e', '--expires-at', '2001-01-01T00:00:00Z'], env());
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('error: --expires-at must be in the future');
    });

    it('prints help per command on stdout and exits 0', async () => {
      const cases: [string[], RegExp][] = [
        [['--help'], /^Usage: tdg \[options\] \[command\][\s\S]*Exit codes:\n {2}0 {2}done[\s\S]* {2}5 {2}the database cannot be used/],
        [['help', 'endpoints'], /^Usage: tdg endpoints \[options\] \[command\][\s\S]*disable \[options\] <id>/],
        [['keys', 'issue', '--help'], /^Usage: tdg keys issue\|create \[options\][\s\S]*--source <source>[\s\S]*--expires-at <date-time>[\s\S]*--json/],
        [['admins', 'tokens', 'revoke', '-h'], /^Usage: tdg admins tokens revoke \[options\] <token-id>[\s\S]*--json/],
      ];
      const runs = await Promise.all(cases.map(([args]) => cli(args, { DATABASE_URL: UNREACHABLE_DATABASE })));
      runs.forEach((run, i) => {
        const [args, help] = cases[i];
        expect({ args, code: run.code, help: help.test(run.stdout), stderr: run.stderr }).toEqual({ args, code: 0, help: true, stderr: '' });
      });
    });

    it('exits 3 for what does not exist, with a clear message', async () => {
      const missing = await cli(['keys', 'revoke', randomUUID()], env());
      expect(missing.code).toBe(3);
      expect(missing.stderr).toMatch(/error: No such API key\n$/);
      expect(await failing(['keys', 'rotate', 'not-a-uuid'])).toEqual({
        code: 3,
        problem: { type: 'about:blank', title: 'Not Found', status: 404, code: 'NOT_FOUND', detail: 'No such API key' },
      });
    });

    it('exits 5 when the database cannot be reached, without the password', async () => {
      const down = await cli(['keys', 'list'], { DATABASE_URL: UNREACHABLE_DATABASE });
      expect(down.code).toBe(5);
      expect(down.stderr).toContain('error: The database could not be reached (ECONNREFUSED); check DATABASE_URL, the PG* variables or DATA_DIR');
      expect(down.stderr).not.toContain('nothing');
      expectNoInternals(down.stderr);
      const scripted = await cli(['keys', 'list', '--json'], { DATABASE_URL: UNREACHABLE_DATABASE });
      expect(scripted.code).toBe(5);
      expect(scripted.stdout).toBe('');
      expect(JSON.parse(scripted.stderr)).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    });

    it('refuses to work on an unmigrated database when MIGRATIONS_RUN=false (exit 5), saying what to do', async () => {
      const empty = await createTestDatabase();
      try {
        const run = await cli(['keys', 'list'], { DATABASE_URL: empty, MIGRATIONS_RUN: 'false' });
        expect(run.code).toBe(5);
        expect(run.stderr).toContain('MIGRATIONS_RUN=false: run the migrations first (npm run migration:run');
      } finally {
        await dropTestDatabase(empty);
      }
    });
  });

  describe('with the PG* variables (DATABASE_URL unset)', () => {
    // Characters that a URL would need encoded: the variables take the password as it is.
    const password = "p@ss:w/o?r#d% 'x'";
    const role = `gw_pg_${randomUUID().slice(0, 8)}`;
    let databaseUrl: string;

    beforeAll(async () => {
      databaseUrl = await createTestDatabase();
      const client = new Client({ connectionString: databaseUrl });
      await client.connect();
      await client.query(`CREATE ROLE ${role} LOGIN PASSWORD ${client.escapeLiteral(password)}`);
      await client.query(`GRANT ALL ON SCHEMA public TO ${role}`);
      await client.end();
    });
    afterAll(async () => {
      await dropTestDatabase(databaseUrl);
      const client = new Client({ connectionString: databaseUrl.replace(/\/[^/]*$/, '/postgres') });
      await client.connect();
      await client.query(`DROP ROLE IF EXISTS ${role}`);
      await client.end();
    });

    it('connects with PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE, and says so', async () => {
      const url = new URL(databaseUrl);
      const database = url.pathname.slice(1);
      const env = { DATABASE_URL: '', PGHOST: url.hostname, PGPORT: url.port, PGUSER: role, PGPASSWORD: password, PGDATABASE: database };
      const run = await cli(['keys', 'issue', '--source', 'pg-variables'], env);
      expect(run.stderr).toContain(`Using PostgreSQL at ${url.hostname}:${url.port}/${database} (PGHOST and the other PG* variables)`);
      expect(run.code).toBe(0);
      expect(run.stdout + run.stderr).not.toContain(password);
      const owner = new Client({ connectionString: databaseUrl });
      await owner.connect();
      const { rows } = await owner.query('SELECT source FROM api_keys');
      await owner.end();
      expect(rows).toEqual([{ source: 'pg-variables' }]);
    });
  });

  describe('with the embedded PostgreSQL under DATA_DIR', () => {
    let dataDir: string;
    let gateway: Spawned | undefined;
    const postmasterPid = () => Number(readFileSync(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'gateway-cli-'));
    });
    afterAll(async () => {
      if (gateway?.child.exitCode === null) gateway.child.kill('SIGKILL');
      await removeDataDir(dataDir);
    });

    // A new cluster (initdb), a gateway and three processes on it, one after the other.
    it("shares a running gateway's cluster without stopping it, and otherwise starts and stops its own", async () => {
      const env = { DATABASE_URL: '', TEST_DATABASE_URL: '', DATA_DIR: dataDir };
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      gateway = startGateway({ ...env, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN: TEST_ADMIN_TOKEN });
      await waitFor(async () => (await fetch(`${base}/health/ready`)).status === 200, 'gateway readiness');
      const cluster = postmasterPid();

      const run = await cli(['keys', 'issue', '--source', 'embedded-cli'], env);
      expect(run.code).toBe(0);
      const { key } = created(run.stdout);
      expect(alive(cluster)).toBe(true);
      expect((await fetch(`${base}/health/ready`)).status).toBe(200);
      expect((await fetch(`${base}/api/v1/me`, { headers: { 'x-api-key': key } })).status).toBe(200);

      gateway.child.kill('SIGTERM');
      expect(await gateway.exited).toBe(0);
      expect(alive(cluster)).toBe(false);

      const list = await cli(['keys', 'list'], env);
      expect(list.code).toBe(0);
      expect(list.stdout).toContain(`${key.slice(0, 12)}…${key.slice(-4)}`);
      expect(list.stderr).toContain(`Using the embedded PostgreSQL of DATA_DIR ${await realpath(dataDir)}`);
      expect(existsSync(join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
    }, 300_000);

    it('refuses to read from a DATA_DIR that has no database (exit 5), creating nothing there', async () => {
      const wrong = join(dataDir, 'not-the-gateways');
      const run = await cli(['keys', 'list'], { DATABASE_URL: '', TEST_DATABASE_URL: '', DATA_DIR: wrong });
      expect(run.code).toBe(5);
      expect(run.stderr.trim()).toBe(
        `error: There is no embedded database in DATA_DIR ${wrong}: point DATA_DIR at the gateway's data directory, or set DATABASE_URL`,
      );
      expect(existsSync(wrong)).toBe(false);
    });
  });

  describe('npx tdg, as the README runs it', () => {
    /** A command in `cwd`, with npm's cache of its own, so that npx's link to the project is the test's. */
    const npm = async (cwd: string, cache: string, command: string, args: string[]): Promise<Run> => {
      const child = spawn(command, args, {
        cwd,
        env: { ...process.env, npm_config_cache: cache, npm_config_update_notifier: 'false' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | string>((resolve) => child.on('close', (exit, signal) => resolve(exit ?? signal ?? 'unknown')));
      return { code, stdout, stderr };
    };

    // A build of the whole project and npx twice: minutes on a busy machine.
    it('still runs after a rebuild: the build leaves dist/cli.js executable', async () => {
      // A copy of the project with its own dist/, so the rebuild does not touch the one other tests run.
      const dir = await mkdtemp(join(tmpdir(), 'tdg-rebuild-'));
      try {
        for (const entry of ['package.json', 'nest-cli.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'dist'])
          await cp(join(ROOT, entry), join(dir, entry), { recursive: true });
        await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
        const cache = join(dir, '.npm');
        // The first npx links the project's bin into its cache; a rebuild then writes dist/ anew.
        expect((await npm(dir, cache, 'npx', ['--no-install', 'tdg', '--help'])).code).toBe(0);
        const build = await npm(dir, cache, 'npm', ['run', 'build']);
        expect({ code: build.code, stderr: build.stderr }).toEqual({ code: 0, stderr: '' });
        expect(statSync(join(dir, 'dist', 'cli.js')).mode & 0o111).toBe(0o111);
        const help = await npm(dir, cache, 'npx', ['--no-install', 'tdg', '--help']);
        expect({ code: help.code, stderr: help.stderr }).toEqual({ code: 0, stderr: '' });
        expect(help.stdout).toMatch(/^Usage: tdg /);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    }, 600_000);
  });
});

import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashApiKey } from '../../src/auth/api-key-format';
import { freePort } from '../../src/database/embedded-postgres';
import { removeDataDir } from '../../src/database/embedded-postgres-layout';
import { Client } from 'pg';
import { createTestDatabase, dropTestDatabase } from '../support/database';
import { ROOT, Spawned, spawnNode, startGateway, waitFor } from '../support/processes';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from '../support/test-app';

const KEY = /sk_tax_[0-9A-Za-z]{43}/;
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** Nothing listening here: a command that reaches for the database fails with exit code 1. */
const UNREACHABLE_DATABASE = 'postgres://nobody:nothing@127.0.0.1:1/none';

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | string; stdout: string; output: string }> {
  const run = spawnNode([join(ROOT, 'dist', 'cli.js'), ...args], env);
  const code = await run.closed;
  return { code, stdout: run.stdout(), output: run.output() };
}

function created(stdout: string): { key: string; id: string } {
  const key = KEY.exec(stdout)?.[0];
  const id = new RegExp(`id\\s+(${UUID})`).exec(stdout)?.[1];
  if (!key || !id) throw new Error(`no key and id in:\n${stdout}`);
  return { key, id };
}

describe('operator CLI (node dist/cli.js)', () => {
  describe('with DATABASE_URL', () => {
    let databaseUrl: string;
    let t: TestApp;
    let issued: { key: string; id: string };
    const env = () => ({ DATABASE_URL: databaseUrl });
    const me = (key: string) => t.app.inject({ method: 'GET', url: '/api/v1/me', headers: { 'x-api-key': key } });

    beforeAll(async () => {
      databaseUrl = await createTestDatabase();
    });
    afterAll(async () => {
      await t?.close();
      await dropTestDatabase(databaseUrl);
    });

    it('creates a key on a database that was never migrated, printing it once, and the key works against the API', async () => {
      const run = await cli(['api-keys', 'create', '--source', 'cli-e2e', '--name', 'CLI test'], env());
      expect(run.code).toBe(0);
      issued = created(run.stdout);
      expect(run.stdout).toContain('Created an API key for source cli-e2e.');
      expect(run.stdout).toContain('shown now and never again');
      expect(run.stdout.match(new RegExp(KEY, 'g'))).toHaveLength(1);
      // The schema came from the migrations, run by the CLI; that note is a diagnostic, not output.
      expect(run.output).toMatch(/Applied migrations: \w+/);
      expect(run.stdout).not.toContain('Applied migrations');
      expect(run.stdout).not.toMatch(/^\{|\[Nest\]|query:/m);

      t = await startTestApp({ databaseUrl });
      const res = await me(issued.key);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ source: 'cli-e2e', keyId: issued.id, keyPrefix: issued.key.slice(0, 12) });
    });

    it('lists keys as a table, never with the key or its hash, and filters by source', async () => {
      const other = created((await cli(['api-keys', 'create', '--source', 'cli-other'], env())).stdout);

      const all = await cli(['api-keys', 'list'], env());
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

      const filtered = await cli(['api-keys', 'list', '--source', 'cli-other'], env());
      expect(filtered.code).toBe(0);
      expect(filtered.stdout).toContain(other.id);
      expect(filtered.stdout).not.toContain(issued.id);
      expect((await cli(['api-keys', 'list', '--source', 'nobody-here'], env())).stdout).toBe('No API keys for source nobody-here.\n');
    });

    it('revokes a key: the very next request with it gets 401', async () => {
      expect((await me(issued.key)).statusCode).toBe(200);
      const run = await cli(['api-keys', 'revoke', issued.id], env());
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(`Revoked API key ${issued.id} (cli-e2e`);
      expect((await me(issued.key)).statusCode).toBe(401);
      const listed = await cli(['api-keys', 'list', '--source', 'cli-e2e'], env());
      expect(listed.stdout).toMatch(new RegExp(`${issued.id}\\s+cli-e2e\\s+REVOKED`));
    });

    it('writes the same audit entries as the REST API, with "cli" as the address', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/admin/audit-log', headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
      expect(res.statusCode).toBe(200);
      const entries = (res.json().data as { action: string; keyId: string; remoteAddress: string; source: string }[]).filter((e) => e.keyId === issued.id);
      expect(entries.map((e) => e.action)).toEqual(['api_key.revoked', 'api_key.created']);
      expect(entries.every((e) => e.remoteAddress === 'cli' && e.source === 'cli-e2e')).toBe(true);
      expect(res.body).not.toContain(issued.key);
    });

    it('exits 2 with an error and the usage for a bad command line, before touching the database', async () => {
      const cases: [string[], RegExp][] = [
        [[], /error: no command given/],
        [['frobnicate'], /error: unknown command "frobnicate"/],
        [['api-keys'], /error: no api-keys command given: create, list or revoke/],
        [['api-keys', 'rotate', 'x'], /error: unknown api-keys command "rotate"/],
        [['api-keys', 'create'], /error: --source is required/],
        [['api-keys', 'create', '--source'], /error: Option '--source <value>' argument missing/],
        [['api-keys', 'create', '--source', 'Not A Source!'], /error: --source must be 2-63 characters/],
        [['api-keys', 'create', '--source', 'acme-erp', '--name', ''], /error: --name must be longer than or equal to 1 characters/],
        [['api-keys', 'create', '--source', 'acme-erp', '--expires-at', 'next week'], /error: --expires-at must be an ISO 8601 date-time/],
        [['api-keys', 'list', '--bogus'], /error: Unknown option '--bogus'/],
        [['api-keys', 'revoke'], /error: revoke takes exactly one key id/],
        [['api-keys', 'revoke', 'a', 'b'], /error: revoke takes exactly one key id/],
      ];
      const runs = await Promise.all(cases.map(([args]) => cli(args, { DATABASE_URL: UNREACHABLE_DATABASE })));
      runs.forEach((run, i) => {
        const [args, message] = cases[i];
        expect({ args, code: run.code, message: message.test(run.output), usage: run.output.includes('Usage:'), stdout: run.stdout }).toEqual({
          args,
          code: 2,
          message: true,
          usage: true,
          stdout: '',
        });
      });
    });

    it('exits 2 for an expiry in the past, a rule the service itself enforces', async () => {
      const run = await cli(['api-keys', 'create', '--source', 'cli-e2e', '--expires-at', '2001-01-01T00:00:00Z'], env());
      expect(run.code).toBe(2);
      expect(run.output).toContain('error: --expires-at must be in the future');
    });

    it('prints the usage on stdout for --help and exits 0', async () => {
      for (const args of [['help'], ['--help'], ['api-keys', 'create', '--help']]) {
        const run = await cli(args, { DATABASE_URL: UNREACHABLE_DATABASE });
        expect(run.code).toBe(0);
        expect(run.stdout).toMatch(/^Usage:\n {2}cli api-keys create --source <source>/);
      }
    });

    it('exits 1 with a clear message when the key does not exist or the database cannot be reached', async () => {
      const missing = await cli(['api-keys', 'revoke', randomUUID()], env());
      expect(missing.code).toBe(1);
      expect(missing.output).toContain('error: No such API key');

      const down = await cli(['api-keys', 'list'], { DATABASE_URL: UNREACHABLE_DATABASE });
      expect(down.code).toBe(1);
      expect(down.output).toContain('error: the database could not be reached (ECONNREFUSED)');
      expect(down.output).not.toContain('nothing');
    });

    it('refuses to work on an unmigrated database when MIGRATIONS_RUN=false, saying what to do', async () => {
      const empty = await createTestDatabase();
      try {
        const run = await cli(['api-keys', 'list'], { DATABASE_URL: empty, MIGRATIONS_RUN: 'false' });
        expect(run.code).toBe(1);
        expect(run.output).toContain('MIGRATIONS_RUN=false: run the migrations first (npm run migration:run');
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
      const run = await cli(['api-keys', 'create', '--source', 'pg-variables'], env);
      expect(run.output).toContain(`Using PostgreSQL at ${url.hostname}:${url.port}/${database} (PGHOST and the other PG* variables)`);
      expect(run.code).toBe(0);
      expect(run.output).not.toContain(password);
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

    it("shares a running gateway's cluster without stopping it, and otherwise starts and stops its own", async () => {
      const env = { DATABASE_URL: '', TEST_DATABASE_URL: '', DATA_DIR: dataDir };
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      gateway = startGateway({ ...env, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN: TEST_ADMIN_TOKEN });
      await waitFor(async () => (await fetch(`${base}/health/ready`)).status === 200, 'gateway readiness');
      const cluster = postmasterPid();

      const run = await cli(['api-keys', 'create', '--source', 'embedded-cli'], env);
      expect(run.code).toBe(0);
      const { key } = created(run.stdout);
      expect(alive(cluster)).toBe(true);
      expect((await fetch(`${base}/health/ready`)).status).toBe(200);
      expect((await fetch(`${base}/api/v1/me`, { headers: { 'x-api-key': key } })).status).toBe(200);

      gateway.child.kill('SIGTERM');
      expect(await gateway.exited).toBe(0);
      expect(alive(cluster)).toBe(false);

      const list = await cli(['api-keys', 'list'], env);
      expect(list.code).toBe(0);
      expect(list.stdout).toContain(`${key.slice(0, 12)}…${key.slice(-4)}`);
      expect(list.output).toContain(`Using the embedded PostgreSQL of DATA_DIR ${await realpath(dataDir)}`);
      expect(existsSync(join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
    });

    it('refuses to read from a DATA_DIR that has no database, creating nothing there', async () => {
      const wrong = join(dataDir, 'not-the-gateways');
      const run = await cli(['api-keys', 'list'], { DATABASE_URL: '', TEST_DATABASE_URL: '', DATA_DIR: wrong });
      expect(run.code).toBe(1);
      expect(run.output.trim()).toBe(
        `error: There is no embedded database in DATA_DIR ${wrong}: point DATA_DIR at the gateway's data directory, or set DATABASE_URL`,
      );
      expect(existsSync(wrong)).toBe(false);
    });
  });
});

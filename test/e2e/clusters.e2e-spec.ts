import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/database/embedded-postgres.js';
import { clusterIdOf, DATA_DIRS_FILE, recordDataDir, removeRootCluster, RootCluster, ROOT_CLUSTERS_HOME } from '../../src/database/root-clusters.js';
import { createTestDatabase, dropTestDatabase } from '../support/database.js';
import { ROOT, Spawned, spawnNode, startClusterProcess, startGateway, waitFor } from '../support/processes.js';
import { TEST_ADMIN_TOKEN, TEST_WEBHOOK_SECRET } from '../support/test-app.js';

/** No database anywhere: DATABASE_URL names nothing that listens, DATA_DIR nothing that exists. */
const NO_DATABASE = { DATABASE_URL: 'postgres://nobody:nothing@127.0.0.1:1/none', DATA_DIR: '/nonexistent/tdg-data' };

interface Run {
  code: number | string;
  stdout: string;
  stderr: string;
}

/** `tdg …` with stdin not a terminal, as in a script. */
async function cli(args: string[], env: NodeJS.ProcessEnv = NO_DATABASE): Promise<Run> {
  const run = spawnNode([join(ROOT, 'dist', 'cli.js'), ...args], env);
  const code = await run.closed;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

const listed = async (dir: string): Promise<Record<string, RootCluster['state']>> => {
  const run = await cli(['clusters', 'list', '--dir', dir, '--json']);
  expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  return Object.fromEntries((JSON.parse(run.stdout).data as RootCluster[]).map((c) => [c.id, c.state]));
};

/** util-linux `script` gives a command a terminal of its own, fed from our stdin. */
const hasScript = process.platform === 'linux' && spawnSync('script', ['--version']).status === 0;

describe('tdg clusters, on a directory laid out as /var/lib/tax-document-gateway', () => {
  let home: string;
  let dataDirs: string;
  let postmaster: Spawned | undefined;

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'tdg-clusters-'));
    dataDirs = await mkdtemp(join(tmpdir(), 'tdg-clusters-data-'));
  });
  afterAll(async () => {
    postmaster?.child.kill('SIGKILL');
    await rm(home, { recursive: true, force: true });
    await rm(dataDirs, { recursive: true, force: true });
  });

  /** `<home>/<id>/pg` recording `records` (null: made by an earlier version), optionally linked from a DATA_DIR, or run by `pid`. */
  const cluster = async (id: string, records: string[] | null, { linkFrom, pid }: { linkFrom?: string; pid?: number } = {}) => {
    await mkdir(join(home, id, 'pg'), { recursive: true });
    await writeFile(join(home, id, 'pg', 'PG_VERSION'), '17\n');
    for (const dataDir of records ?? []) await recordDataDir(join(home, id), dataDir);
    if (linkFrom) {
      await mkdir(linkFrom, { recursive: true });
      await symlink(join(home, id, 'pg'), join(linkFrom, 'pg'));
    }
    if (pid) await writeFile(join(home, id, 'pg', 'postmaster.pid'), `${pid}\n${join(home, id, 'pg')}\n1700000000\n5432\n`);
  };

  it('lists every cluster and removes only the orphaned ones, asking first; never one in use, and with no database at all', async () => {
    // A process standing in for a postmaster whose DATA_DIR was deleted while it ran.
    postmaster = spawnNode(['-e', 'setInterval(() => undefined, 1000)']);
    const linked = join(dataDirs, 'linked');
    await cluster('1111111111111111', [linked], { linkFrom: linked });
    await cluster('2222222222222222', [join(dataDirs, 'deleted')]);
    await cluster('3333333333333333', [join(dataDirs, 'deleted-while-running')], { pid: postmaster.child.pid });
    await cluster('4444444444444444', null);
    // Not clusters: the binaries' copy, and a link named like a cluster (never followed).
    await mkdir(join(home, 'postgres-17.10.0-beta.17', 'bin'), { recursive: true });
    await mkdir(join(dataDirs, 'elsewhere'));
    await symlink(join(dataDirs, 'elsewhere'), join(home, '5555555555555555'));

    expect(await listed(home)).toEqual({
      '1111111111111111': 'linked',
      '2222222222222222': 'orphaned',
      '3333333333333333': 'running',
      '4444444444444444': 'unrecorded',
    });
    const list = await cli(['clusters', 'list', '--dir', home]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+STATE\s+SIZE\s+POSTMASTER\s+DATA_DIR\n/);
    expect(list.stdout).toMatch(new RegExp(`\\n2222222222222222\\s+orphaned\\s+[\\d.]+ KiB\\s+-\\s+${join(dataDirs, 'deleted')} \\(no link\\)\\n`));
    expect(list.stdout).toMatch(new RegExp(`\\n3333333333333333\\s+running\\s+[\\d.]+ KiB\\s+pid ${postmaster.child.pid}\\s`));
    expect(list.stderr).toMatch(
      /^orphaned: no DATA_DIR links to it any more; 'tdg clusters prune' removes it \([\d.]+ KiB\)\.\nrunning: .*\nunrecorded: .*--unrecorded' removes the rest\.\n$/,
    );

    // No terminal to ask in: refused, whether for a person or for a script (--json), and nothing goes.
    const unasked = await cli(['clusters', 'prune', '--dir', home]);
    expect(unasked).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "error: clusters prune asks before it removes anything, and there is no terminal to ask in: add --yes\nRun 'tdg clusters prune --help' for usage.\n",
    });
    const unaskedJson = await cli(['clusters', 'prune', '--dir', home, '--json']);
    expect(unaskedJson.code).toBe(2);
    expect(JSON.parse(unaskedJson.stderr)).toMatchObject({ status: 422, code: 'VALIDATION_ERROR' });
    expect(existsSync(join(home, '2222222222222222'))).toBe(true);

    const pruned = await cli(['clusters', 'prune', '--dir', home, '--yes']);
    expect({ code: pruned.code, stderr: pruned.stderr }).toEqual({ code: 0, stderr: '' });
    expect(pruned.stdout).toMatch(new RegExp(`^Removed ${join(home, '2222222222222222')} \\([\\d.]+ KiB\\)\\.\\n$`));
    expect(await listed(home)).toEqual({ '1111111111111111': 'linked', '3333333333333333': 'running', '4444444444444444': 'unrecorded' });

    // Once its process has gone, the cluster whose DATA_DIR was deleted under it is orphaned like the others.
    postmaster.child.kill('SIGKILL');
    await postmaster.exited;
    const all = await cli(['clusters', 'prune', '--dir', home, '--yes', '--unrecorded', '--json']);
    expect({ code: all.code, stderr: all.stderr }).toEqual({ code: 0, stderr: '' });
    const answer = JSON.parse(all.stdout) as { removed: RootCluster[]; kept: RootCluster[] };
    expect(answer.removed.map((c) => [c.id, c.state])).toEqual([
      ['3333333333333333', 'orphaned'],
      ['4444444444444444', 'unrecorded'],
    ]);
    expect(answer.kept).toEqual([]);
    expect(await listed(home)).toEqual({ '1111111111111111': 'linked' });
    expect(existsSync(join(home, 'postgres-17.10.0-beta.17', 'bin'))).toBe(true);
    expect((await lstat(join(home, '5555555555555555'))).isSymbolicLink()).toBe(true);
    expect(existsSync(join(dataDirs, 'elsewhere'))).toBe(true);
    expect(await cli(['clusters', 'prune', '--dir', home, '--yes'])).toEqual({ code: 0, stdout: `Nothing to remove in ${home}.\n`, stderr: '' });
  }, 180_000);

  (hasScript ? it : it.skip)('asks in a terminal, and removes only on yes', async () => {
    await cluster('6666666666666666', [join(dataDirs, 'gone')]);
    /** `tdg clusters prune` in a terminal, typing `typed`. */
    const inTerminal = (typed: string) =>
      new Promise<string>((resolve) => {
        const command = `${process.execPath} ${join(ROOT, 'dist', 'cli.js')} clusters prune --dir ${home}`;
        const child = spawn('script', ['-qec', command, '/dev/null'], { env: { ...process.env, ...NO_DATABASE }, stdio: ['pipe', 'pipe', 'pipe'] });
        let output = '';
        child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        child.stdin.end(typed);
        child.on('close', () => resolve(output));
      });
    const declined = await inTerminal('n\n');
    expect(declined).toMatch(/6666666666666666\s+orphaned/);
    expect(declined).toContain('Remove this cluster (');
    expect(declined).toContain('Nothing removed.');
    expect(existsSync(join(home, '6666666666666666'))).toBe(true);
    const accepted = await inTerminal('y\n');
    expect(accepted).toContain(`Removed ${join(home, '6666666666666666')} (`);
    expect(existsSync(join(home, '6666666666666666'))).toBe(false);
  });

  it('removes one cluster named by its id or by the DATA_DIR it belonged to, leaving the other orphans; never one in use', async () => {
    await cluster('7777777777777777', [join(dataDirs, 'gone-a')]);
    await cluster('8888888888888888', [join(dataDirs, 'gone-c')]);
    // Named by its DATA_DIR, with the id that DATA_DIR's cluster gets.
    const goneB = join(dataDirs, 'gone-b');
    await cluster(clusterIdOf(goneB), [goneB]);
    await cluster('aaaaaaaaaaaaaaaa', null);
    const before = await listed(home);
    expect(before).toMatchObject({
      '1111111111111111': 'linked',
      '7777777777777777': 'orphaned',
      '8888888888888888': 'orphaned',
      [clusterIdOf(goneB)]: 'orphaned',
    });

    const byId = await cli(['clusters', 'prune', '7777777777777777', '--dir', home, '--yes']);
    expect(byId).toEqual({
      code: 0,
      stdout: expect.stringMatching(new RegExp(`^Removed ${join(home, '7777777777777777')} \\([\\d.]+ KiB\\)\\.\\n$`)),
      stderr: '',
    });
    const byDataDir = await cli(['clusters', 'prune', goneB, '--dir', home, '--yes', '--json']);
    expect({ code: byDataDir.code, stderr: byDataDir.stderr }).toEqual({ code: 0, stderr: '' });
    expect((JSON.parse(byDataDir.stdout) as { removed: RootCluster[] }).removed.map((c) => c.id)).toEqual([clusterIdOf(goneB)]);
    // Named, an unrecorded cluster goes without --unrecorded: naming it is the operator's say-so.
    expect((await cli(['clusters', 'prune', 'aaaaaaaaaaaaaaaa', '--dir', home, '--yes'])).code).toBe(0);

    // In use, or unknown: refused with the usual exit codes (4, 3), and nothing goes.
    const linked = await cli(['clusters', 'prune', '1111111111111111', '--dir', home, '--yes']);
    expect(linked).toEqual({
      code: 4,
      stdout: '',
      stderr: `error: Cluster 1111111111111111 is in use: ${join(dataDirs, 'linked')} links to it. Delete that DATA_DIR first if it is not wanted\n`,
    });
    const unknown = await cli(['clusters', 'prune', 'ffffffffffffffff', '--dir', home, '--yes', '--json']);
    expect(unknown.code).toBe(3);
    expect(JSON.parse(unknown.stderr)).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(await listed(home)).toEqual({ '1111111111111111': 'linked', '8888888888888888': 'orphaned' });
  });
});

/** Root's clusters live in the real /var/lib/tax-document-gateway: this touches only the ones it makes itself. */
(process.getuid?.() === 0 ? describe : describe.skip)('as root: the cluster records its DATA_DIR, and the start-up log names clusters left over', () => {
  let dataDir: string | undefined;
  let id: string | undefined;
  let databaseUrl: string | undefined;
  let gateway: Spawned | undefined;

  afterAll(async () => {
    if (gateway?.child.exitCode === null) gateway.child.kill('SIGKILL');
    if (id) await rm(join(ROOT_CLUSTERS_HOME, id), { recursive: true, force: true });
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    if (databaseUrl) await dropTestDatabase(databaseUrl);
  });

  it('orphans the cluster of a deleted DATA_DIR, which the next start warns about once and prune removes', async () => {
    dataDir = await realpath(await mkdtemp(join(tmpdir(), 'gateway-orphan-')));
    const cluster = await startClusterProcess(dataDir);
    id = clusterIdOf(dataDir);
    expect(await readFile(join(ROOT_CLUSTERS_HOME, id, DATA_DIRS_FILE), 'utf8')).toBe(`${dataDir}\n`);
    const state = async () => (await listed(ROOT_CLUSTERS_HOME))[id!];
    expect(await state()).toBe('linked');
    // Its DATA_DIR deleted while it runs: in use still.
    await rm(dataDir, { recursive: true, force: true });
    expect(await state()).toBe('running');
    await cluster.stop();
    expect(await state()).toBe('orphaned');

    databaseUrl = await createTestDatabase();
    const scratch = await mkdtemp(join(tmpdir(), 'gateway-orphan-start-'));
    try {
      const port = await freePort();
      gateway = startGateway({
        DATABASE_URL: databaseUrl,
        PORT: String(port),
        HOST: '127.0.0.1',
        ADMIN_TOKEN: TEST_ADMIN_TOKEN,
        BANK_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
        DATA_DIR: scratch,
      });
      const running = gateway;
      const banner = await waitFor(
        async () => running.stdout().includes('is ready on') || (running.child.exitCode !== null && 'exited'),
        'the start-up banner',
      );
      expect([banner, banner === 'exited' && running.output()]).toEqual([true, false]);
      const warnings = running
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as { level: number; msg: string })
        .filter((line) => line.msg.includes(ROOT_CLUSTERS_HOME));
      // Others may have left clusters there too: the count is at least this one.
      expect(warnings).toEqual([
        expect.objectContaining({
          level: 40,
          msg: expect.stringMatching(
            /^\d+ embedded PostgreSQL clusters? in \/var\/lib\/tax-document-gateway belongs? to no DATA_DIR any more.*, not this gateway's; (it|they) may be another checkout's: `npx tdg clusters list` shows each .*, `npx tdg clusters prune <id>` removes one/,
          ),
        }),
      ]);
      running.child.kill('SIGTERM');
      expect(await running.exited).toBe(0);
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }

    // What prune does for each cluster it removes (prune itself would also take other people's orphans here).
    expect(await removeRootCluster(ROOT_CLUSTERS_HOME, id, { unrecorded: false })).toEqual({ removed: true, state: 'orphaned' });
    expect(await state()).toBeUndefined();
  }, 300_000);
});

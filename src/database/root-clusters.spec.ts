import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import {
  ClusterFacts,
  DATA_DIRS_FILE,
  leftoverClustersNotice,
  listRootClusters,
  mayRemove,
  recordDataDir,
  removeRootCluster,
  stateOf,
} from './root-clusters.js';

/** A pid no process has any more: a child that has exited and been reaped. */
const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid;

describe('which clusters are orphaned, which in use', () => {
  const facts = (over: Partial<ClusterFacts>): ClusterFacts => ({ dataDirs: ['/srv/a'], linkedFrom: [], postmasterPid: null, ...over });

  it.each([
    ['a DATA_DIR links to it', 'linked', facts({ linkedFrom: ['/srv/a'] })],
    ['a DATA_DIR links to it while it runs', 'linked', facts({ linkedFrom: ['/srv/a'], postmasterPid: 42 })],
    ['no DATA_DIR links to it, but its postmaster runs', 'running', facts({ postmasterPid: 42 })],
    ['it records no DATA_DIR, and its postmaster runs', 'running', facts({ dataDirs: null, postmasterPid: 42 })],
    ['none of the DATA_DIRs it records links to it', 'orphaned', facts({ dataDirs: ['/srv/a', '/srv/b'] })],
    ['it records no DATA_DIR', 'unrecorded', facts({ dataDirs: null })],
  ])('%s: %s', (_case, state, given) => {
    expect(stateOf(given)).toBe(state);
  });

  it('removes only an orphaned cluster, and an unrecorded one only when asked to; never one linked or running', () => {
    const removable = (unrecorded: boolean) => (['linked', 'running', 'orphaned', 'unrecorded'] as const).filter((s) => mayRemove(s, { unrecorded }));
    expect(removable(false)).toEqual(['orphaned']);
    expect(removable(true)).toEqual(['orphaned', 'unrecorded']);
  });
});

describe('the clusters of a directory', () => {
  let home: string;
  let dataDirs: string;

  beforeEach(async () => {
    home = await mkdtemp(join(tmpdir(), 'root-clusters-'));
    dataDirs = await mkdtemp(join(tmpdir(), 'root-clusters-data-'));
  });
  afterEach(async () => {
    await rm(home, { recursive: true, force: true });
    await rm(dataDirs, { recursive: true, force: true });
  });

  /** A cluster directory as the gateway lays it out: `<home>/<id>/pg`, recording `records` (none: an earlier version's). */
  const cluster = async (id: string, records: string[] | null, postmasterPid?: number) => {
    await mkdir(join(home, id, 'pg'), { recursive: true });
    await writeFile(join(home, id, 'pg', 'PG_VERSION'), '17\n');
    for (const dataDir of records ?? []) await recordDataDir(join(home, id), dataDir);
    if (postmasterPid) await writeFile(join(home, id, 'pg', 'postmaster.pid'), `${postmasterPid}\n/somewhere\n1700000000\n5432\n`);
    return join(home, id);
  };
  const dataDir = async (name: string, linkTo?: string) => {
    const dir = join(dataDirs, name);
    await mkdir(dir);
    if (linkTo) await symlink(linkTo, join(dir, 'pg'));
    return dir;
  };

  it('reads each one: linked, running on a live process, orphaned, unrecorded; nothing else there is a cluster', async () => {
    const kept = await dataDir('kept');
    await cluster('1111111111111111', [kept]);
    await symlink(join(home, '1111111111111111', 'pg'), join(kept, 'pg'));
    const moved = await dataDir('moved');
    // A DATA_DIR that was moved still links to its cluster, relatively or not: it counts once recorded.
    await cluster('2222222222222222', [join(dataDirs, 'gone'), moved]);
    await symlink(relative(moved, join(home, '2222222222222222', 'pg')), join(moved, 'pg'));
    await cluster('3333333333333333', [join(dataDirs, 'deleted')], process.pid);
    await cluster('4444444444444444', [join(dataDirs, 'deleted-too')], deadPid());
    await cluster('5555555555555555', null);
    // Linking to another cluster does not count for this one.
    await cluster('6666666666666666', [await dataDir('elsewhere', join(home, '1111111111111111', 'pg'))]);
    await mkdir(join(home, 'postgres-17.10.0-beta.17', 'bin'), { recursive: true });
    await mkdir(join(home, '.copy-abc123'));
    await symlink(dataDirs, join(home, '7777777777777777'));

    const listed = await listRootClusters(home);
    expect(listed.map((c) => [c.id, c.state, c.postmasterPid])).toEqual([
      ['1111111111111111', 'linked', null],
      ['2222222222222222', 'linked', null],
      ['3333333333333333', 'running', process.pid],
      ['4444444444444444', 'orphaned', null],
      ['5555555555555555', 'unrecorded', null],
      ['6666666666666666', 'orphaned', null],
    ]);
    expect(listed[1]).toMatchObject({ path: join(home, '2222222222222222'), dataDirs: [join(dataDirs, 'gone'), moved], linkedFrom: [moved] });
    expect(listed[4].dataDirs).toBeNull();
    for (const c of listed) expect(c.bytes).toBeGreaterThan(0);
    expect((await listRootClusters(home, { sizes: false })).map((c) => c.bytes)).toEqual([0, 0, 0, 0, 0, 0]);
  });

  it('knows a linked cluster however the clusters directory is named: relative, or through a link', async () => {
    const kept = await dataDir('kept');
    await cluster('1111111111111111', [kept]);
    await symlink(join(home, '1111111111111111', 'pg'), join(kept, 'pg'));
    const viaLink = join(dataDirs, 'clusters-link');
    await symlink(home, viaLink);
    for (const named of [relative(process.cwd(), home), viaLink]) {
      expect((await listRootClusters(named)).map((c) => c.state)).toEqual(['linked']);
      expect(await removeRootCluster(named, '1111111111111111', { unrecorded: true })).toEqual({ removed: false, state: 'linked' });
    }
  });

  it('lists nothing where there is no such directory', async () => {
    await expect(listRootClusters(join(home, 'none'))).resolves.toEqual([]);
  });

  it('records each DATA_DIR once, beside the ones recorded before', async () => {
    const path = await cluster('1111111111111111', ['/srv/a']);
    await recordDataDir(path, '/srv/a');
    await recordDataDir(path, '/srv/b');
    expect(await readFile(join(path, DATA_DIRS_FILE), 'utf8')).toBe('/srv/a\n/srv/b\n');
  });

  it('removes an orphaned cluster, but not one that a DATA_DIR linked to or a postmaster started on since it was listed', async () => {
    const orphan = await cluster('1111111111111111', [join(dataDirs, 'gone')]);
    const relinked = await cluster('2222222222222222', [join(dataDirs, 'back')]);
    const restarted = await cluster('3333333333333333', [join(dataDirs, 'gone-too')]);
    expect((await listRootClusters(home)).map((c) => c.state)).toEqual(['orphaned', 'orphaned', 'orphaned']);
    await dataDir('back', join(relinked, 'pg'));
    await writeFile(join(restarted, 'pg', 'postmaster.pid'), `${process.pid}\n`);

    expect(await removeRootCluster(home, '1111111111111111', { unrecorded: false })).toEqual({ removed: true, state: 'orphaned' });
    expect(await removeRootCluster(home, '2222222222222222', { unrecorded: false })).toEqual({ removed: false, state: 'linked' });
    expect(await removeRootCluster(home, '3333333333333333', { unrecorded: false })).toEqual({ removed: false, state: 'running' });
    expect([orphan, relinked, restarted].map((path) => existsSync(path))).toEqual([false, true, true]);
  });

  it('removes an unrecorded cluster only when told to, and never through a link or outside the cluster names', async () => {
    const unrecorded = await cluster('1111111111111111', null);
    expect(await removeRootCluster(home, '1111111111111111', { unrecorded: false })).toEqual({ removed: false, state: 'unrecorded' });
    expect(await removeRootCluster(home, '1111111111111111', { unrecorded: true })).toEqual({ removed: true, state: 'unrecorded' });
    expect(existsSync(unrecorded)).toBe(false);

    await mkdir(join(home, 'postgres-17.10.0-beta.17'));
    await expect(removeRootCluster(home, 'postgres-17.10.0-beta.17', { unrecorded: true })).rejects.toThrow('Not a cluster directory');
    await expect(removeRootCluster(home, '../../etc', { unrecorded: true })).rejects.toThrow('Not a cluster directory');
    await symlink(dataDirs, join(home, '2222222222222222'));
    await expect(removeRootCluster(home, '2222222222222222', { unrecorded: true })).rejects.toThrow('Not a cluster directory');
    expect(existsSync(join(home, 'postgres-17.10.0-beta.17'))).toBe(true);
    expect(existsSync(dataDirs)).toBe(true);
  });

  it("says in one line for the start-up log how many are left over, that they are not this gateway's, and how to look and remove", async () => {
    const linked = await dataDir('linked');
    await symlink(join(await cluster('0000000000000000', [linked]), 'pg'), join(linked, 'pg'));
    await cluster('9999999999999999', [join(dataDirs, 'deleted')], process.pid);
    await expect(leftoverClustersNotice(home)).resolves.toBeNull();

    await cluster('1111111111111111', [join(dataDirs, 'gone')]);
    await expect(leftoverClustersNotice(home)).resolves.toBe(
      `1 embedded PostgreSQL cluster in ${home} belongs to no DATA_DIR any more, not this gateway's; it may be another checkout's: ` +
        `\`npx tdg clusters list\` shows each with the DATA_DIR it belonged to, \`npx tdg clusters prune <id>\` removes one, \`npx tdg clusters prune\` every orphaned one`,
    );
    await cluster('2222222222222222', [join(dataDirs, 'gone-too')]);
    await cluster('3333333333333333', null);
    await expect(leftoverClustersNotice(home)).resolves.toBe(
      `2 embedded PostgreSQL clusters in ${home} belong to no DATA_DIR any more (1 more, made by an earlier version, does not record which DATA_DIR it belongs to), ` +
        `not this gateway's; they may be another checkout's: \`npx tdg clusters list\` shows each with the DATA_DIR it belonged to, ` +
        `\`npx tdg clusters prune <id>\` removes one, \`npx tdg clusters prune\` every orphaned one`,
    );
    await rm(join(home, '1111111111111111'), { recursive: true });
    await rm(join(home, '2222222222222222'), { recursive: true });
    await cluster('4444444444444444', null);
    await expect(leftoverClustersNotice(home)).resolves.toBe(
      `2 embedded PostgreSQL clusters in ${home}, made by an earlier version, do not record which DATA_DIR they belong to, not this gateway's; they may be another checkout's: \`npx tdg clusters list\` shows them`,
    );
  });
});

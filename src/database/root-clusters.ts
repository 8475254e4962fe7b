import { createHash } from 'node:crypto';
import { appendFile, lstat, readdir, readFile, readlink, realpath, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/**
 * As root, PostgreSQL runs as the `postgres` user, which often cannot enter the directory the project
 * was cloned into (root's home and every `mktemp -d` are mode 0700). Rather than loosen the
 * permissions of the operator's directories, the cluster and a copy of the binaries live here, owned
 * by `postgres`; DATA_DIR/pg is a symbolic link to the cluster, so DATA_DIR stays the place to look.
 */
export const ROOT_CLUSTERS_HOME = '/var/lib/tax-document-gateway';

/**
 * In a cluster's directory: every DATA_DIR that has used it, one absolute path a line. The link goes from
 * DATA_DIR to the cluster only, so without this nobody could tell whether the DATA_DIR of a cluster is gone.
 */
export const DATA_DIRS_FILE = 'data-dirs';

/** The name of a cluster's directory: the only entries `tdg clusters` looks at (never the binaries' copy). */
const CLUSTER_ID = /^[0-9a-f]{16}$/;

export const clusterIdOf = (dataDir: string) => createHash('sha256').update(dataDir).digest('hex').slice(0, 16);

/**
 * - `linked`: a DATA_DIR it records links to it;
 * - `running`: none does, but a postmaster runs on it (a gateway whose DATA_DIR was deleted under it);
 * - `orphaned`: none of the DATA_DIRs it records links to it any more, and nothing runs on it;
 * - `unrecorded`: made before clusters recorded their DATA_DIR, and nothing runs on it: whether its DATA_DIR
 *   is gone cannot be told (a start on that DATA_DIR records it).
 */
export type ClusterState = 'linked' | 'running' | 'orphaned' | 'unrecorded';

export interface ClusterFacts {
  /** The DATA_DIRs it records; null when it records none (made by an earlier version). */
  dataDirs: string[] | null;
  /** Those of them whose `pg` link still leads to it. */
  linkedFrom: string[];
  /** The process its postmaster.pid names, when that process is alive. */
  postmasterPid: number | null;
}

export interface RootCluster extends ClusterFacts {
  id: string;
  path: string;
  state: ClusterState;
  /** Space on disk, as du counts it. */
  bytes: number;
}

/** A cluster some DATA_DIR links to, or that a live process runs, is in use whatever else is true. */
export function stateOf(facts: ClusterFacts): ClusterState {
  if (facts.linkedFrom.length > 0) return 'linked';
  if (facts.postmasterPid !== null) return 'running';
  return facts.dataDirs === null ? 'unrecorded' : 'orphaned';
}

/** Only an orphaned cluster is removed, and an unrecorded one when the operator says so; never one in use. */
export function mayRemove(state: ClusterState, { unrecorded }: { unrecorded: boolean }): boolean {
  return state === 'orphaned' || (unrecorded && state === 'unrecorded');
}

/** Notes `dataDir` in its cluster's directory, once. */
export async function recordDataDir(clusterHome: string, dataDir: string): Promise<void> {
  // A path with a line break cannot be written a line; its cluster stays unrecorded, which is never removed unasked.
  if (/[\r\n]/.test(dataDir)) return;
  const recorded = await readRecord(join(clusterHome, DATA_DIRS_FILE));
  if (!recorded?.includes(dataDir)) await appendFile(join(clusterHome, DATA_DIRS_FILE), `${dataDir}\n`, { mode: 0o644 });
}

async function readRecord(file: string): Promise<string[] | null> {
  try {
    return [...new Set((await readFile(file, 'utf8')).split('\n').filter(Boolean))];
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return null;
    throw error;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // Another user's process (checked without root) is alive too.
    return (error as { code?: string }).code === 'EPERM';
  }
}

async function postmasterPid(clusterDir: string): Promise<number | null> {
  const content = await readFile(join(clusterDir, 'postmaster.pid'), 'utf8').catch((error: { code?: string }) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
  const pid = Number(content?.split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : null;
}

/** The path with every symbolic link resolved, or as given when it does not exist. */
const canonical = (path: string) => realpath(path).catch(() => resolve(path));

/** Compared as real paths: `--dir` may be relative or reach the clusters through a link, the link target is absolute. */
async function linksHere(dataDir: string, clusterDir: string): Promise<boolean> {
  const link = join(dataDir, 'pg');
  const target = await readlink(link).catch(() => null);
  return target !== null && (await canonical(resolve(dataDir, target))) === (await canonical(clusterDir));
}

/** What `du` counts: the blocks of every file and directory, links not followed. */
async function diskUsage(path: string): Promise<number> {
  const stats = await lstat(path).catch(() => null);
  if (!stats) return 0;
  let bytes = stats.blocks * 512;
  if (stats.isDirectory()) {
    for (const entry of await readdir(path).catch(() => [])) bytes += await diskUsage(join(path, entry));
  }
  return bytes;
}

async function factsOf(path: string): Promise<ClusterFacts> {
  const clusterDir = join(path, 'pg');
  const dataDirs = await readRecord(join(path, DATA_DIRS_FILE));
  const linkedFrom: string[] = [];
  for (const dataDir of dataDirs ?? []) if (await linksHere(dataDir, clusterDir)) linkedFrom.push(dataDir);
  return { dataDirs, linkedFrom, postmasterPid: await postmasterPid(clusterDir) };
}

/** The cluster directories under `home` (none when it does not exist), oldest name first; `sizes: false` skips du. */
export async function listRootClusters(home = ROOT_CLUSTERS_HOME, { sizes = true } = {}): Promise<RootCluster[]> {
  const entries = await readdir(home, { withFileTypes: true }).catch((error: { code?: string }) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  const clusters: RootCluster[] = [];
  // Directories only: a symbolic link planted here is never followed, let alone removed through.
  for (const entry of entries.filter((e) => e.isDirectory() && CLUSTER_ID.test(e.name)).sort((a, b) => a.name.localeCompare(b.name))) {
    const path = join(home, entry.name);
    const facts = await factsOf(path);
    clusters.push({ id: entry.name, path, state: stateOf(facts), bytes: sizes ? await diskUsage(path) : 0, ...facts });
  }
  return clusters;
}

/**
 * Removes one cluster directory if it may be removed now: its state is read again first, so a cluster that
 * a gateway started on, or that a DATA_DIR linked to, since it was listed is kept. Answers the state it found.
 */
export async function removeRootCluster(home: string, id: string, options: { unrecorded: boolean }): Promise<{ removed: boolean; state: ClusterState }> {
  if (!CLUSTER_ID.test(id)) throw new Error(`Not a cluster directory: ${id}`);
  const path = join(home, id);
  if (!(await lstat(path)).isDirectory()) throw new Error(`Not a cluster directory: ${path}`);
  const state = stateOf(await factsOf(path));
  if (!mayRemove(state, options)) return { removed: false, state };
  await rm(path, { recursive: true, force: true });
  return { removed: true, state };
}

/**
 * One line for the start-up log when clusters under `home` belong to no DATA_DIR any more (or may not); null
 * otherwise. Never this start's own cluster, which is linked: the line says so, and how to look before removing.
 */
export async function leftoverClustersNotice(home = ROOT_CLUSTERS_HOME): Promise<string | null> {
  const clusters = await listRootClusters(home, { sizes: false });
  const orphaned = clusters.filter((c) => c.state === 'orphaned').length;
  const unrecorded = clusters.filter((c) => c.state === 'unrecorded').length;
  const clustersIn = (n: number) => `${n} embedded PostgreSQL cluster${n === 1 ? '' : 's'} in ${home}`;
  const unknown = (n: number) =>
    `made by an earlier version, ${n === 1 ? 'does' : 'do'} not record which DATA_DIR ${n === 1 ? 'it belongs' : 'they belong'} to`;
  const notOurs = (n: number) => `not this gateway's; ${n === 1 ? 'it' : 'they'} may be another checkout's`;
  if (orphaned > 0) {
    const more = unrecorded > 0 ? ` (${unrecorded} more, ${unknown(unrecorded)})` : '';
    return (
      `${clustersIn(orphaned)} belong${orphaned === 1 ? 's' : ''} to no DATA_DIR any more${more}, ${notOurs(orphaned + unrecorded)}: ` +
      '`npx tdg clusters list` shows each with the DATA_DIR it belonged to, `npx tdg clusters prune <id>` removes one, `npx tdg clusters prune` every orphaned one'
    );
  }
  if (unrecorded > 0) return `${clustersIn(unrecorded)}, ${unknown(unrecorded)}, ${notOurs(unrecorded)}: \`npx tdg clusters list\` shows them`;
  return null;
}

import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { removeDataDir } from '../../src/database/embedded-postgres-layout.js';
import { listRootClusters, removeRootCluster, ROOT_CLUSTERS_HOME } from '../../src/database/root-clusters.js';

const inTmp = (path: string) => !relative(tmpdir(), path).startsWith('..');

/**
 * As root, a test that deletes its DATA_DIR without its cluster leaves the whole cluster under
 * /var/lib/tax-document-gateway for good (tests use removeDataDir). Whatever the run made there whose
 * DATA_DIR, a temporary directory, is gone and which nothing runs is removed here, and named, so that the
 * test responsible can be found.
 */
async function removeLeftoverClusters(before: Set<string>): Promise<void> {
  const left = (await listRootClusters(undefined, { sizes: false })).filter((c) => !before.has(c.id) && c.state === 'orphaned' && c.dataDirs!.every(inTmp));
  const removed = [];
  for (const cluster of left) if ((await removeRootCluster(ROOT_CLUSTERS_HOME, cluster.id, { unrecorded: false })).removed) removed.push(cluster);
  if (removed.length > 0) {
    const named = removed.map((c) => `${join(ROOT_CLUSTERS_HOME, c.id)} (DATA_DIR ${c.dataDirs!.join(', ')})`).join('; ');
    process.stderr.write(`\nRemoved ${removed.length} embedded cluster(s) that tests left behind: ${named}\n`);
  }
}

export default async function globalTeardown(): Promise<void> {
  const state = globalThis as { __testCluster?: { stop: () => Promise<void>; dataDir: string }; __clustersBefore?: Set<string> };
  const cluster = state.__testCluster;
  if (cluster) {
    await cluster.stop();
    await removeDataDir(cluster.dataDir);
  }
  if (state.__clustersBefore) await removeLeftoverClusters(state.__clustersBefore);
}

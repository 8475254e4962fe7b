import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { listRootClusters } from '../../src/database/root-clusters.js';
import { ROOT, startClusterProcess } from './processes.js';

/**
 * One PostgreSQL server for the whole run: TEST_DATABASE_URL when set, otherwise an embedded cluster
 * in a temporary directory. Each test file then creates its own database on it (test/support/database.ts).
 */
export default async function globalSetup(): Promise<void> {
  if (!existsSync(join(ROOT, 'dist', 'main.js'))) {
    throw new Error('dist/main.js is missing: run `npm run build` first (npm test does it for you)');
  }
  // The medium and e2e projects share one server: whichever of them starts first sets it up.
  if (process.env.TEST_SERVER_URL) return;
  // As root, the clusters there before the run: global-teardown.mts removes what the run leaves beside them.
  if (process.getuid?.() === 0) {
    (globalThis as { __clustersBefore?: Set<string> }).__clustersBefore = new Set((await listRootClusters(undefined, { sizes: false })).map((c) => c.id));
  }
  // Printed before the first file runs: a newcomer sees at once what the next minutes are spent on.
  process.stderr.write(
    `\nTests that need PostgreSQL run against ${process.env.TEST_DATABASE_URL ? 'TEST_DATABASE_URL' : 'an embedded cluster started now'}; ` +
      'each file prints its result as it finishes (the whole suite takes several minutes).\n',
  );
  if (process.env.TEST_DATABASE_URL) {
    process.env.TEST_SERVER_URL = process.env.TEST_DATABASE_URL;
    return;
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'gateway-test-pg-'));
  const cluster = await startClusterProcess(dataDir);
  process.env.TEST_SERVER_URL = cluster.url;
  (globalThis as { __testCluster?: unknown }).__testCluster = { stop: cluster.stop, dataDir };
}

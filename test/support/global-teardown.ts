import { removeDataDir } from '../../src/database/embedded-postgres-layout';

export default async function globalTeardown(): Promise<void> {
  const cluster = (globalThis as { __testCluster?: { stop: () => Promise<void>; dataDir: string } }).__testCluster;
  if (!cluster) return;
  await cluster.stop();
  await removeDataDir(cluster.dataDir);
}

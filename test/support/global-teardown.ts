import { rm } from 'node:fs/promises';

export default async function globalTeardown(): Promise<void> {
  const cluster = (globalThis as { __testCluster?: { stop: () => Promise<void>; dataDir: string } }).__testCluster;
  if (!cluster) return;
  await cluster.stop();
  await rm(cluster.dataDir, { recursive: true, force: true });
}

/**
 * Runs one embedded PostgreSQL cluster in its own process, for tests: prints `READY <url>` on stdout,
 * stops the cluster cleanly on SIGTERM. A process of its own, so that a test can stop, kill or restart
 * the cluster independently of the Jest worker, as a real deployment's database would be.
 *
 *   node --import @swc-node/register/esm-register test/support/embedded-cluster.ts <dataDir> [port]
 */
import { startEmbeddedPostgres } from '../../src/database/embedded-postgres.js';

async function main(): Promise<void> {
  const [dataDir, port] = process.argv.slice(2);
  const cluster = await startEmbeddedPostgres({ dataDir, port: port ? Number(port) : undefined });
  const stop = async () => {
    await cluster.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  process.stdout.write(`READY ${cluster.url}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`embedded cluster failed: ${String(error)}\n`);
  process.exit(1);
});

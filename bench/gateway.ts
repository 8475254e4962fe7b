/**
 * The built gateway as the benches run it: its own process on a free loopback port, quiet, with a rate
 * limit no bench reaches and loopback push receivers allowed; and the admin call that issues a key.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { freePort } from '../src/database/embedded-postgres.js';
import { GATEWAY_NODE_ARGS } from '../test/support/processes.js';

export const BENCH_ADMIN_TOKEN = 'bench-admin-token-0123456789';
export const BENCH_WEBHOOK_SECRET = 'bench-webhook-secret-0123456789';
export const BENCH_ARCHIVE_SIGNING_KEY = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

export interface BenchGateway {
  url: string;
  child: ChildProcess;
  /** SIGTERM, and resolves once the process has exited. */
  stop(): Promise<void>;
}

/** Starts dist/main.js on `databaseUrl` and resolves once it answers ready. */
export async function startBenchGateway(databaseUrl: string): Promise<BenchGateway> {
  const port = await freePort();
  const child = spawn(process.execPath, GATEWAY_NODE_ARGS, {
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
      BANK_WEBHOOK_SECRET: BENCH_WEBHOOK_SECRET,
      // Set, so that no key is generated into the repository's .data.
      ARCHIVE_SIGNING_KEY: process.env.ARCHIVE_SIGNING_KEY ?? BENCH_ARCHIVE_SIGNING_KEY,
      RATE_LIMIT_PER_MINUTE: '1000000',
      // The push receivers listen on loopback.
      OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true',
    },
    stdio: 'inherit',
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const gateway = {
    url: `http://127.0.0.1:${port}`,
    child,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
  for (
    let i = 0;
    !(await fetch(`${gateway.url}/health/ready`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  ) {
    if (i > 300) {
      await gateway.stop();
      throw new Error('the gateway did not become ready');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return gateway;
}

/** Issues an API key for `source` through the admin API. */
export async function issueKey(url: string, source: string): Promise<string> {
  const response = await fetch(`${url}/admin/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ source }),
  });
  if (response.status !== 201) throw new Error(`issuing a key for ${source} answered ${response.status}`);
  return ((await response.json()) as { key: string }).key;
}

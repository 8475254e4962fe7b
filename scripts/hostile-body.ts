/**
 * `npm run build && npm run bench:hostile`: how long the gateway takes to refuse
 * bodies built to be expensive (about 110,000 unknown keys in just under 1 MiB; 6,000 keys under the
 * JSON route limit; a valid document as a reference), and the longest `/health/live` waited
 * meanwhile. The built gateway runs in its own process (DATABASE_URL, or an embedded cluster in a
 * temporary directory); ROUNDS (5) rounds, each body sent once per round while liveness is polled, and
 * liveness polled alone as the reference for its waits.
 */
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startEmbeddedPostgres } from '../src/database/embedded-postgres.js';
import { documentBody } from '../test/support/factories.js';
import { GATEWAY_NODE_ARGS } from '../test/support/processes.js';

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const ADMIN_TOKEN = 'hostile-admin-token-0123456789';

const wideBody = (keys: number) => JSON.stringify(Object.fromEntries(Array.from({ length: keys }, (_, i) => [i.toString(36), 0])));

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await work();
  return [result, performance.now() - start];
}

interface Probe {
  status: number;
  ms: number;
  bytes: number;
  liveWorstMs: number;
}

/** Sends `body` while polling /health/live back to back; the answer's status and time, and the worst liveness wait. */
async function probe(url: string, key: string, body: string | null): Promise<Probe> {
  let sending = true;
  let liveWorstMs = 0;
  const poller = (async () => {
    while (sending) {
      const [, ms] = await timed(() => fetch(`${url}/health/live`).then((r) => r.arrayBuffer()));
      liveWorstMs = Math.max(liveWorstMs, ms);
    }
  })();
  const [[status, bytes], ms] = await timed(async () => {
    if (body === null) {
      await new Promise((r) => setTimeout(r, 50));
      return [0, 0] as const;
    }
    const res = await fetch(`${url}/api/v1/documents`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'x-idempotency-key': `hostile-${randomUUID()}`, 'content-type': 'application/json' },
      body,
    });
    return [res.status, (await res.arrayBuffer()).byteLength] as const;
  });
  sending = false;
  await poller;
  return { status, ms, bytes, liveWorstMs };
}

async function main(): Promise<void> {
  const dataDir = process.env.DATABASE_URL ? undefined : await mkdtemp(join(tmpdir(), 'gateway-hostile-'));
  const embedded = dataDir ? await startEmbeddedPostgres({ dataDir }) : undefined;
  const port = await freePort();
  const gateway = spawn(process.execPath, GATEWAY_NODE_ARGS, {
    env: {
      ...process.env,
      DATABASE_URL: process.env.DATABASE_URL ?? embedded!.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN,
      RATE_LIMIT_PER_MINUTE: '1000000',
    },
    stdio: 'inherit',
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    for (
      let i = 0;
      !(await fetch(`${url}/health/ready`).then(
        (r) => r.ok,
        () => false,
      ));
      i++
    ) {
      if (i > 300) throw new Error('the gateway did not become ready');
      await new Promise((r) => setTimeout(r, 100));
    }
    const issued = await fetch(`${url}/admin/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ source: 'hostile-probe' }),
    }).then((r) => r.json() as Promise<{ key: string }>);
    const scenarios: [string, () => string | null][] = [
      ['none: liveness alone for 50 ms (reference)', () => null],
      ['valid document (reference)', () => JSON.stringify(documentBody('hostile-probe', { externalId: randomUUID() }))],
      ['110,000 unknown keys, 0.9 MiB', () => wideBody(110_000)],
      ['6,000 unknown keys, < 64 KiB', () => wideBody(6_000)],
    ];
    const rows: string[] = [];
    for (const [name, build] of scenarios) {
      const results: Probe[] = [];
      for (let round = 0; round < ROUNDS; round++) results.push(await probe(url, issued.key, build()));
      const worst = (pick: (r: Probe) => number) => Math.max(...results.map(pick)).toFixed(1);
      // Statuses and sizes of the liveness-only reference are shown as '–'.
      const median = (pick: (r: Probe) => number) =>
        results
          .map(pick)
          .sort((a, b) => a - b)
          [Math.floor(results.length / 2)].toFixed(1);
      rows.push(
        `| ${name} | ${[...new Set(results.map((r) => r.status || '–'))].join(',')} | ${median((r) => r.ms)} | ${worst((r) => r.ms)} | ${worst((r) => r.bytes)} | ${worst((r) => r.liveWorstMs)} |`,
      );
    }
    process.stdout.write(
      `${ROUNDS} rounds each\n\n| body | status | answer ms (median) | answer ms (worst) | answer bytes | /health/live worst wait ms |\n|---|---|---:|---:|---:|---:|\n${rows.join('\n')}\n`,
    );
  } finally {
    gateway.kill('SIGTERM');
    await new Promise((r) => gateway.once('exit', r));
    await embedded?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});

/**
 * `npm run bench`: throughput and latency of the main paths, each as a ratio to GET /health/live
 * measured in the same run on the same machine (absolute numbers mean little across machines).
 * The built gateway (dist/main.js, so `npm run build` first) runs in its own process; the load comes
 * from this one, over loopback, for a fixed time per scenario (60 s by default: the whole run keeps one
 * key busy for minutes, long enough for a cost that grows with the traffic of the last minute to
 * show). DATABASE_URL, or an embedded cluster in a temporary directory.
 */
import 'reflect-metadata';
import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres.js';
import { removeDataDir } from '../src/database/embedded-postgres-layout.js';
import { signWebhook } from '../src/webhooks/webhook-signature.js';
import { documentBody } from '../test/support/factories.js';
import { BENCH_WEBHOOK_SECRET, issueKey, startBenchGateway } from './gateway.js';
import { runPushScenario } from './push.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);

const documentJson = (source: string) => JSON.stringify(documentBody(source, { externalId: randomUUID() }));

async function main(): Promise<void> {
  const dataDir = process.env.DATABASE_URL ? undefined : await mkdtemp(join(tmpdir(), 'gateway-bench-'));
  const embedded = dataDir ? await startEmbeddedPostgres({ dataDir }) : undefined;
  const databaseUrl = process.env.DATABASE_URL ?? embedded!.url;
  try {
    const gateway = await startBenchGateway(databaseUrl);
    try {
      await runScenarios(gateway.url, databaseUrl);
    } finally {
      await gateway.stop();
    }
  } finally {
    await embedded?.stop();
    if (dataDir) await removeDataDir(dataDir);
  }
}

async function runScenarios(url: string, databaseUrl: string): Promise<void> {
  const issue = (source: string) => issueKey(url, source);
  const source = `bench-${Date.now()}`;
  const apiHeaders = { 'x-api-key': await issue(source), 'content-type': 'application/json' };
  // One at a time: the admin lockout counts each call in flight until its token is compared (429 past 10).
  const manySources: Array<{ source: string; key: string }> = [];
  for (let i = 0; i < CONNECTIONS; i++) manySources.push({ source: `${source}-${i}`, key: await issue(`${source}-${i}`) });
  const replayBody = documentJson(source);
  const created = (await (
    await fetch(`${url}/api/v1/documents`, { method: 'POST', headers: { ...apiHeaders, 'x-idempotency-key': 'bench-replay-key' }, body: replayBody })
  ).json()) as { id: string };

  const scenarios: Array<{ name: string; options: autocannon.Options }> = [
    { name: 'GET /health/live (reference)', options: { url: `${url}/health/live` } },
    { name: 'GET /api/v1/me (key lookup)', options: { url: `${url}/api/v1/me`, headers: apiHeaders } },
    { name: 'GET /api/v1/documents/{id}', options: { url: `${url}/api/v1/documents/${created.id}`, headers: apiHeaders } },
    { name: 'GET /api/v1/documents?limit=20', options: { url: `${url}/api/v1/documents?limit=20`, headers: apiHeaders } },
    {
      name: 'POST /api/v1/documents (new)',
      options: {
        url: `${url}/api/v1/documents`,
        requests: [
          { method: 'POST', setupRequest: (req) => ({ ...req, headers: { ...apiHeaders, 'x-idempotency-key': randomUUID() }, body: documentJson(source) }) },
        ],
      },
    },
    {
      name: `POST /api/v1/documents (new, ${CONNECTIONS} sources)`,
      options: {
        url: `${url}/api/v1/documents`,
        requests: [
          {
            method: 'POST',
            setupRequest: (req) => {
              const { source: s, key } = manySources[Math.floor(Math.random() * manySources.length)];
              return { ...req, headers: { 'x-api-key': key, 'content-type': 'application/json', 'x-idempotency-key': randomUUID() }, body: documentJson(s) };
            },
          },
        ],
      },
    },
    {
      name: 'POST /api/v1/documents (replay)',
      options: { url: `${url}/api/v1/documents`, method: 'POST', headers: { ...apiHeaders, 'x-idempotency-key': 'bench-replay-key' }, body: replayBody },
    },
    {
      name: 'POST bank webhook (new event)',
      options: {
        url: `${url}/api/webhooks/payments/bank`,
        requests: [
          {
            method: 'POST',
            setupRequest: (req) => {
              const body = JSON.stringify({ eventId: randomUUID(), eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: `PAY-${randomUUID()}` });
              const timestamp = new Date().toISOString();
              return {
                ...req,
                body,
                headers: {
                  'content-type': 'application/json',
                  'x-provider-timestamp': timestamp,
                  'x-provider-signature': signWebhook(BENCH_WEBHOOK_SECRET, timestamp, body),
                },
              };
            },
          },
        ],
      },
    },
  ];

  const rows: Array<{ name: string; rps: number; p50: number; p99: number; non2xx: number }> = [];
  for (const { name, options } of scenarios) {
    const result = await autocannon({ ...options, connections: CONNECTIONS, duration: SECONDS });
    rows.push({ name, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, non2xx: result.non2xx });
  }
  const reference = rows[0].rps;
  process.stdout.write(`\n${CONNECTIONS} connections, ${SECONDS} s per scenario, loopback\n\n`);
  process.stdout.write('| scenario | req/s | × reference | p50 ms | p99 ms | non-2xx |\n|---|---:|---:|---:|---:|---:|\n');
  for (const r of rows) {
    process.stdout.write(`| ${r.name} | ${r.rps.toFixed(0)} | ${(r.rps / reference).toFixed(2)} | ${r.p50} | ${r.p99} | ${r.non2xx} |\n`);
  }
  if (process.env.BENCH_PUSH !== 'false') await runPushScenario(url, databaseUrl, CONNECTIONS, issue);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${String(error)}\n`);
  process.exit(1);
});

/**
 * `npm run bench:capacity`: what one request of each path costs the database and the gateway, for the
 * capacity figures of docs/operations.md. Each path is driven at a fixed rate well below saturation
 * (CAPACITY_RATE requests/s for CAPACITY_SECONDS, after 3 s of warm-up, CAPACITY_ROUNDS rounds, median kept),
 * so that the figures are work rather than waiting. Per request: statements (pg_stat_statements, every
 * statement the database ran in the window, background work included), WAL bytes (pg_current_wal_lsn),
 * PostgreSQL's CPU (every process of the cluster, from /proc, exited backends through the postmaster's
 * children's times) and the gateway's CPU (its process, from /proc).
 * DATABASE_URL must name a cluster on this machine with pg_stat_statements preloaded; without it, an
 * embedded cluster in a temporary directory, set up with it.
 */
import 'reflect-metadata';
import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres.js';
import { removeDataDir } from '../src/database/embedded-postgres-layout.js';
import { signWebhook } from '../src/webhooks/webhook-signature.js';
import { documentBody } from '../test/support/factories.js';
import { BENCH_WEBHOOK_SECRET, issueKey, startBenchGateway } from './gateway.js';
import { startReceiver } from './push.js';

const RATE = Number(process.env.CAPACITY_RATE ?? 200);
const SECONDS = Number(process.env.CAPACITY_SECONDS ?? 10);
const ROUNDS = Number(process.env.CAPACITY_ROUNDS ?? 3);
const TICK_US = 1e6 / 100; // USER_HZ is 100 on Linux

/** utime + stime (+ children's, for the postmaster) of a process, in µs; 0 once it is gone. */
function cpuUs(pid: number, children = false): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    const own = Number(fields[11]) + Number(fields[12]);
    return (children ? own + Number(fields[13]) + Number(fields[14]) : own) * TICK_US;
  } catch {
    return 0;
  }
}

/** Every process of the cluster: the postmaster (with its exited children) and its live children. */
function clusterCpuUs(postmaster: number): number {
  let total = cpuUs(postmaster, true);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      if (ppid === postmaster) total += cpuUs(Number(entry));
    } catch {
      // the process ended meanwhile: its time is in the postmaster's children's now
    }
  }
  return total;
}

async function withPgStatStatements(): Promise<{ url: string; stop: () => Promise<void> }> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, stop: async () => undefined };
  const dataDir = await mkdtemp(join(tmpdir(), 'gateway-capacity-'));
  const first = await startEmbeddedPostgres({ dataDir });
  const db = new Client({ connectionString: first.url });
  await db.connect();
  await db.query(`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`);
  await db.query(`ALTER SYSTEM SET pg_stat_statements.track_utility = on`);
  await db.end();
  await first.stop();
  const embedded = await startEmbeddedPostgres({ dataDir, create: false });
  return {
    url: embedded.url,
    stop: async () => {
      await embedded.stop();
      await removeDataDir(dataDir);
    },
  };
}

interface Sample {
  requests: number;
  statements: number;
  walBytes: number;
  pgCpuUs: number;
  gatewayCpuUs: number;
  p50: number;
  p99: number;
  non2xx: number;
}

async function main(): Promise<void> {
  const database = await withPgStatStatements();
  const db = new Client({ connectionString: database.url, application_name: 'capacity-probe' });
  await db.connect();
  await db.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const dataDirectory = (await db.query<{ setting: string }>(`SELECT setting FROM pg_settings WHERE name = 'data_directory'`)).rows[0].setting;
  const postmaster = Number(readFileSync(join(dataDirectory, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const gateway = await startBenchGateway(database.url);
  const receiver = await startReceiver();
  const { url } = gateway;
  try {
    const paths = await preparePaths(url, receiver.url);
    const measure = async (options: autocannon.Options): Promise<Sample> => {
      await autocannon({ ...options, connections: 16, overallRate: RATE, duration: 3 });
      // Let the warm-up's push deliveries and key-usage writes finish before the window opens.
      await new Promise((r) => setTimeout(r, 1500));
      await db.query('SELECT pg_stat_statements_reset()');
      const wal0 = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn;
      const pg0 = clusterCpuUs(postmaster);
      const gw0 = cpuUs(gateway.child.pid!);
      const result = await autocannon({ ...options, connections: 16, overallRate: RATE, duration: SECONDS });
      // The window closes once what the requests started (push deliveries, key usage) has been done.
      await new Promise((r) => setTimeout(r, 1500));
      const gatewayCpuUs = cpuUs(gateway.child.pid!) - gw0;
      const pgCpuUs = clusterCpuUs(postmaster) - pg0;
      const { rows } = await db.query<{ wal: string; statements: string }>(
        `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::bigint AS wal,
                (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat_statements%' AND query NOT ILIKE '%pg_current_wal_lsn%') AS statements`,
        [wal0],
      );
      return {
        requests: result.requests.total,
        statements: Number(rows[0].statements),
        walBytes: Number(rows[0].wal),
        pgCpuUs,
        gatewayCpuUs,
        p50: result.latency.p50,
        p99: result.latency.p99,
        non2xx: result.non2xx,
      };
    };

    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    const lines: string[] = [];
    for (const { name, options } of paths) {
      const samples: Sample[] = [];
      for (let round = 0; round < ROUNDS; round++) samples.push(await measure(options));
      const per = (pick: (s: Sample) => number) => median(samples.map((s) => pick(s) / s.requests));
      const line =
        `| ${name} | ${per((s) => s.statements).toFixed(2)} | ${per((s) => s.walBytes).toFixed(0)} | ${per((s) => s.pgCpuUs).toFixed(0)} | ` +
        `${per((s) => s.gatewayCpuUs).toFixed(0)} | ${median(samples.map((s) => s.p50))} | ${median(samples.map((s) => s.p99))} | ${samples.reduce((n, s) => n + s.non2xx, 0)} |`;
      lines.push(line);
      process.stderr.write(`${line}\n`);
    }
    process.stdout.write(`\n${RATE} requests/s for ${SECONDS} s per round, 16 connections, median of ${ROUNDS} rounds, per request\n\n`);
    process.stdout.write(
      '| path | statements | WAL bytes | PostgreSQL CPU µs | gateway CPU µs | p50 ms | p99 ms | non-2xx |\n|---|---:|---:|---:|---:|---:|---:|---:|\n',
    );
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await gateway.stop();
    await receiver.close();
    await db.end();
    await database.stop();
  }
}

async function preparePaths(url: string, receiverUrl: string): Promise<Array<{ name: string; options: autocannon.Options }>> {
  const issue = (source: string) => issueKey(url, source);
  const source = `capacity-${Date.now()}`;
  const pushedSource = `${source}-push`;
  const key = await issue(source);
  const pushedKey = await issue(pushedSource);
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  const registered = await fetch(`${url}/api/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { 'x-api-key': pushedKey, 'content-type': 'application/json', 'x-idempotency-key': randomUUID() },
    body: JSON.stringify({ url: receiverUrl, eventTypes: ['document.created'] }),
  });
  if (registered.status !== 201) throw new Error(`registering the push endpoint answered ${registered.status}`);
  const replayBody = JSON.stringify(documentBody(source, { externalId: randomUUID() }));
  const created = await fetch(`${url}/api/v1/documents`, { method: 'POST', headers: { ...headers, 'x-idempotency-key': 'capacity-replay' }, body: replayBody });
  const { id } = (await created.json()) as { id: string };
  for (let i = 0; i < 40; i++) {
    await fetch(`${url}/api/v1/documents`, {
      method: 'POST',
      headers: { ...headers, 'x-idempotency-key': randomUUID() },
      body: JSON.stringify(documentBody(source)),
    });
  }
  // Documents whose payment the bank then reports, one event each: enough for every round's warm-up and window.
  const payable = Math.ceil(RATE * (SECONDS + 3) * ROUNDS * 1.2);
  let made = 0;
  await autocannon({
    url: `${url}/api/v1/documents`,
    connections: 16,
    amount: payable,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => ({
          ...req,
          headers: { ...headers, 'x-idempotency-key': randomUUID() },
          body: JSON.stringify(documentBody(source, { externalId: randomUUID(), providerReference: `${source}-pay-${made++}` })),
        }),
      },
    ],
  });
  let paid = 0;
  const signed = (event: () => Record<string, unknown>): autocannon.Options => ({
    url: `${url}/api/webhooks/payments/bank`,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => {
          const body = JSON.stringify(event());
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
  });
  const create = (target: { source: string; key: string }, reference: boolean): autocannon.Options => ({
    url: `${url}/api/v1/documents`,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => ({
          ...req,
          headers: { 'x-api-key': target.key, 'content-type': 'application/json', 'x-idempotency-key': randomUUID() },
          body: JSON.stringify(documentBody(target.source, { externalId: randomUUID(), ...(reference ? { providerReference: `PAY-${randomUUID()}` } : {}) })),
        }),
      },
    ],
  });
  return [
    { name: 'create, no providerReference', options: create({ source, key }, false) },
    { name: 'create with providerReference', options: create({ source, key }, true) },
    { name: 'create, source with one push endpoint (create + its delivery)', options: create({ source: pushedSource, key: pushedKey }, false) },
    {
      name: 'replay',
      options: { url: `${url}/api/v1/documents`, method: 'POST', headers: { ...headers, 'x-idempotency-key': 'capacity-replay' }, body: replayBody },
    },
    { name: 'read by id', options: { url: `${url}/api/v1/documents/${id}`, headers } },
    { name: 'list, 20 documents', options: { url: `${url}/api/v1/documents?limit=20`, headers } },
    { name: 'feed, a page of 20 events', options: { url: `${url}/api/v1/events?limit=20`, headers } },
    {
      name: "bank webhook, a document's payment",
      options: signed(() => ({ eventId: randomUUID(), eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: `${source}-pay-${paid++ % payable}` })),
    },
    {
      name: 'bank webhook, unknown reference (kept for a later create)',
      options: signed(() => ({ eventId: randomUUID(), eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: `PAY-${randomUUID()}` })),
    },
  ];
}

main().catch((error: unknown) => {
  process.stderr.write(`capacity bench failed: ${String(error)}\n`);
  process.exit(1);
});

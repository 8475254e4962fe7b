/**
 * `npm run bench:archive`: what the archive (CONTRACT.md §6, src/archive) does on this machine, in one run,
 * against the built gateway (dist/main.js, so `npm run build` first) in its own process:
 *
 * 1. The create rate: POST /api/v1/documents for BENCH_CREATE_SECONDS (15) with BENCH_CONNECTIONS (32), unique
 *    idempotency keys and externalIds, the sealer at its defaults (ARCHIVE_SEAL_INTERVAL PT1S), and how far
 *    sealing fell behind meanwhile; alternated (ABBA, BENCH_CREATE_ROUNDS pairs, 2) with runs during which the
 *    sealer is held back (see 2), for what sealing costs the create path. After 10 s of warm-up.
 * 2. Sealing throughput: BENCH_BACKLOG (100,000) feed events (documents and their document.created events,
 *    written by SQL) while the sealer is held back, then let go. It is held by this process taking the sealer's
 *    own advisory lock (ARCHIVE_LOCK_NAMESPACE), so every seal the gateway tries finds another "instance"
 *    sealing and stops: the gateway runs throughout, with nothing changed. Entries per second from the first
 *    seal to the last (archive_entries.sealed_at), for a backlog of one source and of BENCH_BACKLOG_SOURCES (32),
 *    and the ratio to the create rate (the bar: at least 5).
 * 3. The archive grown to BENCH_ENTRIES (1,000,000) entries the same way, sealed by the gateway's own sealer
 *    (timed: sealing at scale), then, with the sealer held again (so the nodes it reads do not count), the
 *    latency of GET /api/v1/documents/{id}/archive for random documents and of
 *    GET /api/v1/archive/consistency?from=<random>&to=<size>: BENCH_PROOFS (2,000) one at a time, each proof
 *    verified against the signed checkpoint, then BENCH_PROOF_SECONDS (10) with the connections; and the
 *    archive_nodes rows a proof reads, from its shape (merkle.ts, what the service asks for) and as PostgreSQL
 *    counted them (pg_stat_user_tables).
 *
 * DATABASE_URL names a PostgreSQL server: the bench makes a database of its own on it and drops it at the end
 * (the archive's tables refuse DELETE and TRUNCATE, so nothing less could be cleaned). Without it, an embedded
 * cluster in a temporary directory. Everything it makes is removed at the end, after a failure or Ctrl-C too.
 */
import 'reflect-metadata';
import autocannon from 'autocannon';
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { ARCHIVE_LOCK_NAMESPACE } from '../src/archive/archive.repository.js';
import {
  consistencyProofRanges,
  inclusionProofRanges,
  leafHash,
  NodeRef,
  nodesForRanges,
  rangeHash,
  verifyConsistency,
  verifyInclusion,
} from '../src/archive/merkle.js';
import { openNote, parseCheckpoint } from '../src/archive/signed-note.js';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres.js';
import { removeDataDir } from '../src/database/embedded-postgres-layout.js';
import { documentBody } from '../test/support/factories.js';
import { BenchGateway, issueKey, startBenchGateway } from './gateway.js';

const CREATE_SECONDS = Number(process.env.BENCH_CREATE_SECONDS ?? 15);
/** Pairs of create runs, the sealer running and held, alternated (ABBA). */
const CREATE_ROUNDS = Number(process.env.BENCH_CREATE_ROUNDS ?? 2);
const WARM_UP_SECONDS = 10;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 100_000);
const BACKLOG_SOURCES = Number(process.env.BENCH_BACKLOG_SOURCES ?? 32);
const ENTRIES = Number(process.env.BENCH_ENTRIES ?? 1_000_000);
const PROOFS = Number(process.env.BENCH_PROOFS ?? 2_000);
const PROOF_SECONDS = Number(process.env.BENCH_PROOF_SECONDS ?? 10);
/** Documents per INSERT statement (one transaction each) when writing a backlog. */
const INSERT_CHUNK = 100_000;
/** The longest any wait for the sealer may take before the bench gives up. */
const WAIT_LIMIT_MS = 20 * 60_000;
/** Longer than PostgreSQL's PGSTAT_IDLE_INTERVAL (10 s): by then an idle backend has flushed its table statistics. */
const STATS_FLUSH_MS = 11_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line: string) => process.stderr.write(`[archive bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const format = (value: number, digits = 0) => value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** What the bench made, undone last first: on success, on failure and on SIGINT/SIGTERM. */
const cleanups: Array<() => Promise<unknown>> = [];
async function cleanUp(): Promise<void> {
  for (let undo = cleanups.pop(); undo; undo = cleanups.pop()) {
    await undo().catch((error: unknown) => process.stderr.write(`cleaning up: ${String(error)}\n`));
  }
}

/** A database of the bench's own: on DATABASE_URL's server, or in an embedded cluster in a temporary directory. */
async function benchDatabase(): Promise<{ url: string; kind: string }> {
  const server = process.env.DATABASE_URL;
  if (server) {
    const name = `archive_bench_${randomBytes(4).toString('hex')}`;
    const onServer = async (sql: string) => {
      const client = new Client({ connectionString: server });
      await client.connect();
      try {
        await client.query(sql);
      } finally {
        await client.end();
      }
    };
    await onServer(`CREATE DATABASE ${name}`);
    cleanups.push(() => onServer(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    const url = new URL(server);
    url.pathname = `/${name}`;
    return { url: url.toString(), kind: `database ${name} on DATABASE_URL's server` };
  }
  const dataDir = await mkdtemp(join(tmpdir(), 'gateway-archive-bench-'));
  cleanups.push(() => removeDataDir(dataDir));
  const embedded = await startEmbeddedPostgres({ dataDir });
  cleanups.push(() => embedded.stop());
  return { url: embedded.url, kind: 'embedded cluster' };
}

/** Holds the sealer back by holding its advisory lock (archive.repository.ts): the gateway's try-lock then fails, as for another instance's seal. */
class SealerHold {
  constructor(private readonly client: Client) {}

  /** Waits for a seal in progress to commit, then keeps every later one from starting. */
  async hold(): Promise<void> {
    await this.client.query('SELECT pg_advisory_lock($1::int, 1)', [ARCHIVE_LOCK_NAMESPACE]);
  }

  async release(): Promise<void> {
    await this.client.query('SELECT pg_advisory_unlock($1::int, 1)', [ARCHIVE_LOCK_NAMESPACE]);
  }
}

async function until(what: string, gateway: BenchGateway, probe: () => Promise<boolean>, progress?: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + WAIT_LIMIT_MS;
  let reported = Date.now();
  while (!(await probe())) {
    if (gateway.child.exitCode !== null) throw new Error(`the gateway exited (${gateway.child.exitCode}) while waiting for ${what}`);
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what} after ${WAIT_LIMIT_MS / 1000} s`);
    if (progress && Date.now() - reported > 10_000) {
      log(await progress());
      reported = Date.now();
    }
    await sleep(250);
  }
}

const queryOne = async <T>(db: Client, sql: string, values: unknown[] = []): Promise<T> => (await db.query(sql, values)).rows[0] as T;
/** The tree size: the newest entry's index plus one (the primary key's last entry, cheap at any size). */
const treeSize = async (db: Client) => (await queryOne<{ size: number }>(db, 'SELECT coalesce(max(index) + 1, 0)::int AS size FROM archive_entries')).size;
const eventCount = async (db: Client) => (await queryOne<{ n: number }>(db, 'SELECT count(*)::int AS n FROM document_events')).n;

/**
 * `count` documents of `sources` (round robin) with their document.created events, as the create path writes
 * them, INSERT_CHUNK per statement; then ANALYZE, as autovacuum would have done for tables that grew slowly.
 */
async function insertDocuments(db: Client, sources: readonly string[], count: number): Promise<void> {
  const prefix = randomUUID();
  for (let done = 0; done < count; done += INSERT_CHUNK) {
    await db.query(
      `WITH d AS (
         INSERT INTO documents (source, external_id, type, taxpayer_tax_id, taxpayer_name, taxpayer_country, issue_date, currency, total_amount, tax_amount)
         SELECT ($1::text[])[1 + n % cardinality($1::text[])], $2 || '-' || n, 'INVOICE', 'DE123456789', 'Muster GmbH', 'DE', '2026-11-20', 'EUR', 119.00, 19.00
           FROM generate_series($3::int, $4::int) n
         RETURNING id, source, status, created_at, seq)
       INSERT INTO document_events (source, document_id, type, status, created_at)
       SELECT source, id, 'document.created', status, created_at FROM d ORDER BY seq`,
      [sources, prefix, done, done + Math.min(INSERT_CHUNK, count - done) - 1],
    );
  }
  await db.query('ANALYZE documents, document_events');
}

interface SealRun {
  label: string;
  entries: number;
  fromSize: number;
  seals: number;
  /** Entries per second between the first seal's start and the last's (sealed_at is each seal's start). */
  rate: number;
  /** From letting the sealer go to the last entry committed (includes up to one ARCHIVE_SEAL_INTERVAL before the first seal). */
  wallSeconds: number;
}

/** Lets the held sealer go, waits until every feed event has its entry, holds it again, and reads the seals' times. */
async function sealAll(label: string, db: Client, hold: SealerHold, gateway: BenchGateway): Promise<SealRun> {
  const fromSize = await treeSize(db);
  const target = await eventCount(db);
  log(`${label}: sealing ${format(target - fromSize)} events (tree ${format(fromSize)} → ${format(target)})`);
  const started = performance.now();
  await hold.release();
  await until(
    `${label} to be sealed`,
    gateway,
    async () => (await treeSize(db)) >= target,
    async () => `${label}: ${format((await treeSize(db)) - fromSize)} of ${format(target - fromSize)} sealed`,
  );
  const wallSeconds = (performance.now() - started) / 1000;
  await hold.hold();
  const seals = await queryOne<{ seals: number; entries: number; span: number; before_last: number }>(
    db,
    `WITH seal AS (SELECT sealed_at, count(*)::int AS n FROM archive_entries WHERE index >= $1 GROUP BY sealed_at)
     SELECT count(*)::int AS seals, sum(n)::int AS entries, extract(epoch FROM max(sealed_at) - min(sealed_at))::float8 AS span,
            (sum(n) - (SELECT n FROM seal ORDER BY sealed_at DESC LIMIT 1))::int AS before_last
       FROM seal`,
    [fromSize],
  );
  // Every seal but the last had committed when the last began.
  const rate = seals.seals > 1 ? seals.before_last / seals.span : seals.entries / wallSeconds;
  const run = { label, entries: seals.entries, fromSize, seals: seals.seals, rate, wallSeconds };
  log(`${label}: ${format(run.entries)} entries in ${run.seals} seals, ${format(rate)} entries/s (${format(wallSeconds, 1)} s from release)`);
  return run;
}

interface CreateRun {
  held: boolean;
  rps: number;
  requests: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  maxUnsealed: number;
  catchUpSeconds: number;
}

const unsealed = async (db: Client) =>
  (await queryOne<{ n: number }>(db, 'SELECT ((SELECT count(*) FROM document_events) - (SELECT count(*) FROM archive_entries))::int AS n')).n;

/** Creates with unique idempotency keys and externalIds, as bench/run.ts sends them. */
function createLoad(url: string, source: string, key: string): autocannon.Options {
  return {
    url: `${url}/api/v1/documents`,
    connections: CONNECTIONS,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => ({
          ...req,
          headers: { 'x-api-key': key, 'content-type': 'application/json', 'x-idempotency-key': randomUUID() },
          body: JSON.stringify(documentBody(source, { externalId: randomUUID() })),
        }),
      },
    ],
  };
}

/**
 * The create rate; how many events were unsealed at worst, and how long after the load sealing caught up. With
 * `held`, the sealer is held back during the load and let go after it: what sealing costs the create path.
 */
async function measureCreates(load: autocannon.Options, db: Client, gateway: BenchGateway, hold: SealerHold, held: boolean): Promise<CreateRun> {
  const label = held ? 'create, sealer held' : 'create, sealer at its defaults';
  if (held) await hold.hold();
  log(`${label}: ${CREATE_SECONDS} s, ${CONNECTIONS} connections`);
  let sampling = true;
  let maxUnsealed = 0;
  const sampler = (async () => {
    while (sampling) {
      maxUnsealed = Math.max(maxUnsealed, await unsealed(db));
      await sleep(1000);
    }
  })();
  const result = await autocannon({ ...load, duration: CREATE_SECONDS });
  const ended = performance.now();
  sampling = false;
  await sampler;
  maxUnsealed = Math.max(maxUnsealed, await unsealed(db));
  if (held) await hold.release();
  await until('the creates to be sealed', gateway, async () => (await unsealed(db)) === 0);
  const run = {
    held,
    rps: result.requests.average,
    requests: result.requests.total,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    maxUnsealed,
    catchUpSeconds: (performance.now() - ended) / 1000,
  };
  log(
    `${label}: ${format(run.rps)} req/s, p99 ${run.p99} ms, at most ${format(maxUnsealed)} events unsealed, all sealed ${format(run.catchUpSeconds, 1)} s after`,
  );
  return run;
}

interface TableStats {
  /** archive_nodes rows fetched through an index. */
  nodesFetched: number;
  /** Rows read by sequential scans of the tables that grow with the archive (none should be). */
  bigSeqRows: number;
}

/** Table counters, once every backend has flushed what it counted. */
async function tableStats(db: Client): Promise<TableStats> {
  await sleep(STATS_FLUSH_MS);
  return queryOne<TableStats>(
    db,
    `SELECT coalesce(sum(idx_tup_fetch) FILTER (WHERE relname = 'archive_nodes'), 0)::float8 AS "nodesFetched",
            coalesce(sum(seq_tup_read), 0)::float8 AS "bigSeqRows"
       FROM pg_stat_user_tables WHERE relname IN ('archive_nodes', 'archive_entries', 'documents', 'document_events')`,
  );
}

interface ProofRun {
  name: string;
  requests: number;
  p50: number;
  p99: number;
  max: number;
  /** What is left out for the reference (a plain read, no proof). */
  proof?: {
    /** Stored nodes per proof, as the service asks for them (merkle.ts's nodesForRanges of the proof's ranges). */
    nodesMean: number;
    nodesMax: number;
    /** archive_nodes rows PostgreSQL fetched per request; rows of the large tables read by sequential scans per request. */
    indexRowsPerRequest: number;
    seqRowsPerRequest: number;
    hashesMean: number;
    failures: number;
  };
  loadRps: number;
  loadP50: number;
  loadP99: number;
  loadNon2xx: number;
}

/** One request after another: each one's time (ms) and answer. */
async function sequential(paths: readonly string[], headers: Record<string, string>, url: string): Promise<{ times: number[]; answers: unknown[] }> {
  const times: number[] = [];
  const answers: unknown[] = [];
  for (const path of paths) {
    const started = performance.now();
    const response = await fetch(`${url}${path}`, { headers });
    const body: unknown = await response.json();
    times.push(performance.now() - started);
    if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}: ${JSON.stringify(body)}`);
    answers.push(body);
  }
  return { times, answers };
}

async function underLoad(url: string, headers: Record<string, string>, paths: readonly string[]) {
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: PROOF_SECONDS,
    requests: [{ method: 'GET', headers, setupRequest: (req) => ({ ...req, path: paths[Math.floor(Math.random() * paths.length)] }) }],
  });
  return {
    loadRps: result.requests.average,
    loadP50: result.latency.p50,
    loadP99: result.latency.p99,
    loadNon2xx: result.non2xx + result.errors + result.timeouts,
  };
}

async function measureProofs(url: string, source: string, key: string, db: Client, size: number): Promise<{ runs: ProofRun[]; checkpointSize: number }> {
  const headers = { 'x-api-key': key };
  const verifierKey = await (await fetch(`${url}/api/v1/archive/public-key`, { headers })).text();
  const note = await (await fetch(`${url}/api/v1/archive/checkpoint`, { headers })).text();
  const opened = openNote(note, verifierKey);
  const checkpoint = opened.ok ? parseCheckpoint(opened.text) : null;
  if (!checkpoint || checkpoint.size !== size) throw new Error(`the latest checkpoint is not a signed one of size ${size}: ${note}`);
  const { rows } = await db.query<{ id: string }>('SELECT id FROM documents WHERE source = $1 ORDER BY random() LIMIT $2', [source, PROOFS]);
  const documentPaths = rows.map((row) => `/api/v1/documents/${row.id}/archive`);
  const froms = Array.from({ length: PROOFS }, () => 1 + Math.floor(Math.random() * size));
  const consistencyPaths = froms.map((from) => `/api/v1/archive/consistency?from=${from}&to=${size}`);
  const stats = (before: TableStats, after: TableStats, requests: number) => ({
    indexRowsPerRequest: (after.nodesFetched - before.nodesFetched) / requests,
    seqRowsPerRequest: (after.bigSeqRows - before.bigSeqRows) / requests,
  });
  const summary = (times: number[]) => {
    const sorted = [...times].sort((a, b) => a - b);
    return { requests: times.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] };
  };
  const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

  log(`proofs: ${format(documentPaths.length)} GET /api/v1/documents/{id} (the reference) one at a time`);
  const plainPaths = rows.map((row) => `/api/v1/documents/${row.id}`);
  const plain = await sequential(plainPaths, headers, url);
  log(`proofs: ${format(documentPaths.length)} GET /api/v1/documents/{id}/archive one at a time`);
  const stats0 = await tableStats(db);
  const inclusion = await sequential(documentPaths, headers, url);
  const stats1 = await tableStats(db);
  log(`proofs: ${format(consistencyPaths.length)} GET /api/v1/archive/consistency one at a time`);
  const consistency = await sequential(consistencyPaths, headers, url);
  const stats2 = await tableStats(db);

  // Checked after the counters were read: the consistency checks read archive_nodes themselves.
  let inclusionFailures = 0;
  const inclusionNodes: number[] = [];
  const inclusionHashes: number[] = [];
  for (const answer of inclusion.answers as Array<{ checkpoint: string; entries: Array<{ index: number | null; entry: string; inclusionProof?: string[] }> }>) {
    const sealed = answer.entries.filter((entry) => entry.index !== null);
    if (answer.checkpoint !== note || sealed.length === 0) inclusionFailures++;
    for (const { index, entry, inclusionProof = [] } of sealed) {
      const proof = inclusionProof.map((hash) => Buffer.from(hash, 'base64'));
      if (!verifyInclusion(leafHash(entry), index!, size, proof, checkpoint.rootHash)) inclusionFailures++;
      inclusionNodes.push(nodesForRanges(inclusionProofRanges(index!, size)).length);
      inclusionHashes.push(proof.length);
    }
  }
  let consistencyFailures = 0;
  const consistencyNodes: number[] = [];
  const consistencyHashes: number[] = [];
  for (const [i, answer] of (consistency.answers as Array<{ proof: string[] }>).entries()) {
    const from = froms[i];
    const proof = answer.proof.map((hash) => Buffer.from(hash, 'base64'));
    if (!verifyConsistency(from, size, proof, await rootOf(db, from), checkpoint.rootHash)) consistencyFailures++;
    consistencyNodes.push(nodesForRanges(consistencyProofRanges(from, size)).length);
    consistencyHashes.push(proof.length);
  }

  log(`proofs: ${PROOF_SECONDS} s of each with ${CONNECTIONS} connections`);
  const plainLoad = await underLoad(url, headers, plainPaths);
  const inclusionLoad = await underLoad(url, headers, documentPaths);
  const consistencyLoad = await underLoad(url, headers, consistencyPaths);
  return {
    checkpointSize: checkpoint.size,
    runs: [
      { name: 'GET /api/v1/documents/{id} (reference: the plain read)', ...summary(plain.times), ...plainLoad },
      {
        name: 'GET /api/v1/documents/{id}/archive',
        ...summary(inclusion.times),
        proof: {
          nodesMean: mean(inclusionNodes),
          nodesMax: Math.max(...inclusionNodes),
          hashesMean: mean(inclusionHashes),
          ...stats(stats0, stats1, inclusion.times.length),
          failures: inclusionFailures,
        },
        ...inclusionLoad,
      },
      {
        name: 'GET /api/v1/archive/consistency?from=<random>&to=<size>',
        ...summary(consistency.times),
        proof: {
          nodesMean: mean(consistencyNodes),
          nodesMax: Math.max(...consistencyNodes),
          hashesMean: mean(consistencyHashes),
          ...stats(stats1, stats2, consistency.times.length),
          failures: consistencyFailures,
        },
        ...consistencyLoad,
      },
    ],
  };
}

/** MTH(D[0:size]) from the stored nodes: the old root a consistency proof is checked against. */
async function rootOf(db: Client, size: number): Promise<Buffer> {
  const wanted = nodesForRanges([[0, size]]);
  const { rows } = await db.query<{ level: number; index: string; hash: Buffer }>(
    'SELECT n.level, n.index, n.hash FROM archive_nodes n JOIN unnest($1::smallint[], $2::bigint[]) AS w(level, index) ON n.level = w.level AND n.index = w.index',
    [wanted.map((node) => node.level), wanted.map((node) => String(node.index))],
  );
  const hashes = new Map(rows.map((row) => [`${row.level}:${row.index}`, row.hash]));
  return rangeHash(0, size, (node: NodeRef) => hashes.get(`${node.level}:${node.index}`));
}

async function main(): Promise<void> {
  const began = performance.now();
  const startedAt = new Date();
  const loadBefore = loadavg();
  // The gateway inherits this environment (startBenchGateway): a signing key of the run's own, so that
  // nothing is written into the repository's .data, and the archive's intervals at their defaults.
  const dataDir = await mkdtemp(join(tmpdir(), 'gateway-archive-bench-data-'));
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  process.env.DATA_DIR = dataDir;
  process.env.ARCHIVE_SIGNING_KEY = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
  delete process.env.ARCHIVE_SEAL_INTERVAL;
  delete process.env.ARCHIVE_CHECKPOINT_INTERVAL;

  const database = await benchDatabase();
  const db = new Client({ connectionString: database.url, application_name: 'archive-bench' });
  await db.connect();
  cleanups.push(() => db.end());
  const holder = new Client({ connectionString: database.url, application_name: 'archive-bench-sealer-hold' });
  await holder.connect();
  cleanups.push(() => holder.end());
  const hold = new SealerHold(holder);
  const serverVersion = (await queryOne<{ v: string }>(db, 'SELECT current_setting($$server_version$$) AS v')).v;

  const gateway = await startBenchGateway(database.url);
  cleanups.push(() => gateway.stop());
  const { url } = gateway;
  const source = `archive-bench-${Date.now()}`;
  const key = await issueKey(url, source);
  const manySources: string[] = [];
  for (let i = 0; i < BACKLOG_SOURCES; i++) {
    manySources.push(`${source}-${i}`);
    await issueKey(url, `${source}-${i}`);
  }

  // A fresh process's first seconds are slower (JIT, caches): warmed up once, then on and held alternated (ABBA).
  const load = createLoad(url, source, key);
  log(`create: ${WARM_UP_SECONDS} s of warm-up`);
  await autocannon({ ...load, duration: WARM_UP_SECONDS });
  await until('the warm-up to be sealed', gateway, async () => (await unsealed(db)) === 0);
  const creates: CreateRun[] = [];
  for (let round = 0; round < CREATE_ROUNDS; round++) {
    for (const held of round % 2 === 0 ? [false, true] : [true, false]) creates.push(await measureCreates(load, db, gateway, hold, held));
  }
  const meanOf = (runs: CreateRun[], pick: (run: CreateRun) => number) => runs.reduce((sum, run) => sum + pick(run), 0) / runs.length;
  const sealingOn = creates.filter((run) => !run.held);
  const sealingHeld = creates.filter((run) => run.held);
  const createRate = meanOf(sealingOn, (run) => run.rps);
  const heldRate = meanOf(sealingHeld, (run) => run.rps);

  await hold.hold();
  log(`backlog: ${format(BACKLOG)} documents and events of one source, the sealer held`);
  await insertDocuments(db, [source], BACKLOG);
  const oneSource = await sealAll(`backlog, 1 source`, db, hold, gateway);
  log(`backlog: ${format(BACKLOG)} documents and events of ${BACKLOG_SOURCES} sources, the sealer held`);
  await insertDocuments(db, manySources, BACKLOG);
  const severalSources = await sealAll(`backlog, ${BACKLOG_SOURCES} sources`, db, hold, gateway);

  const missing = ENTRIES - (await eventCount(db));
  if (missing <= 0) throw new Error(`BENCH_ENTRIES (${ENTRIES}) must exceed the events already written`);
  log(`to ${format(ENTRIES)}: ${format(missing)} documents and events by SQL, the sealer held`);
  const insertStarted = performance.now();
  await insertDocuments(db, [source], missing);
  const insertSeconds = (performance.now() - insertStarted) / 1000;
  log(`to ${format(ENTRIES)}: written in ${format(insertSeconds, 1)} s`);
  const atScale = await sealAll(`to ${format(ENTRIES)}`, db, hold, gateway);

  // The proofs are against the latest checkpoint: let the sealer sign the one of this size (due within ARCHIVE_CHECKPOINT_INTERVAL).
  const size = await treeSize(db);
  const checkpointWait = performance.now();
  await hold.release();
  await until(
    `a checkpoint of size ${size}`,
    gateway,
    async () => (await queryOne<{ n: number }>(db, 'SELECT coalesce(max(tree_size), 0)::int AS n FROM archive_checkpoints')).n === size,
  );
  await hold.hold();
  log(`checkpoint of size ${format(size)} signed ${format((performance.now() - checkpointWait) / 1000, 1)} s after the last seal`);
  await db.query('ANALYZE');
  const storage = await queryOne<{ entries: string; nodes: string; node_rows: string; checkpoints: number }>(
    db,
    `SELECT pg_total_relation_size('archive_entries')::text AS entries, pg_total_relation_size('archive_nodes')::text AS nodes,
            (SELECT count(*) FROM archive_nodes)::text AS node_rows, (SELECT count(*) FROM archive_checkpoints)::int AS checkpoints`,
  );
  const proofs = await measureProofs(url, source, key, db, size);

  const loadAfter = loadavg();
  const minutes = (performance.now() - began) / 60_000;
  const ratio = oneSource.rate / createRate;
  const out = (line = '') => process.stdout.write(`${line}\n`);
  out();
  out(
    `The archive, ${startedAt.toISOString()}: ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${format(totalmem() / 2 ** 30, 1)} GiB, ` +
      `Node ${process.version}, PostgreSQL ${serverVersion} (${database.kind}); load average ${loadBefore.map((l) => l.toFixed(2)).join(' ')} before, ` +
      `${loadAfter.map((l) => l.toFixed(2)).join(' ')} after; ${format(minutes, 1)} min`,
  );
  out();
  out('| measure | value |');
  out('|---|---|');
  const rates = (runs: CreateRun[]) => runs.map((run) => format(run.rps)).join(', ');
  const latencies = (runs: CreateRun[]) => runs.map((run) => `${run.p50} / ${run.p99}`).join(', ');
  const failed = (runs: CreateRun[]) => runs.reduce((sum, run) => sum + run.non2xx + run.errors, 0);
  out(
    `| create rate: POST /api/v1/documents, ${CONNECTIONS} connections, ${CREATE_SECONDS} s × ${sealingOn.length}, sealer at its defaults | ` +
      `**${format(createRate)} req/s** (runs ${rates(sealingOn)}; p50 / p99 ms ${latencies(sealingOn)}; ${failed(sealingOn)} non-2xx or errors) |`,
  );
  out(
    `| sealing during those creates | at most ${sealingOn.map((run) => format(run.maxUnsealed)).join(', ')} events unsealed; ` +
      `all sealed ${sealingOn.map((run) => format(run.catchUpSeconds, 1)).join(', ')} s after the load ended |`,
  );
  out(
    `| create rate with the sealer held (what sealing costs the create path), alternated with the above | ${format(heldRate)} req/s (runs ${rates(sealingHeld)}; ` +
      `p50 / p99 ms ${latencies(sealingHeld)}; ${failed(sealingHeld)} non-2xx or errors): sealing on = ${format(createRate / heldRate, 2)} × of it |`,
  );
  out(
    `| sealing the held creates' events once let go (made by the API, one transaction each) | ` +
      `${sealingHeld.map((run) => `${format(run.maxUnsealed)} in ${format(run.catchUpSeconds, 1)} s`).join(', ')} (including up to 1 s before the first seal) |`,
  );
  for (const run of [oneSource, severalSources, atScale]) {
    out(
      `| sealing, ${run.label}: ${format(run.entries)} events written by SQL while held, tree ${format(run.fromSize)} → ${format(run.fromSize + run.entries)} | ` +
        `**${format(run.rate)} entries/s** (${run.seals} seals; ${format(run.wallSeconds, 1)} s from release to the last entry) = ${format(run.rate / createRate, 1)} × the create rate |`,
    );
  }
  out(`| the bar: sealing (1 source) ÷ create rate ≥ 5 | ${format(ratio, 1)} × — ${ratio >= 5 ? 'met' : 'NOT met'} |`);
  out(
    `| building the ${format(ENTRIES)}-entry archive | ${format(missing)} documents + events by SQL in ${format(insertSeconds, 1)} s, sealed by the gateway's sealer in ${format(atScale.wallSeconds, 1)} s |`,
  );
  out(
    `| storage at ${format(size)} entries | archive_entries ${format(Number(storage.entries) / 2 ** 20)} MiB (${format(Number(storage.entries) / size)} B/entry), ` +
      `archive_nodes ${format(Number(storage.nodes) / 2 ** 20)} MiB (${format(Number(storage.node_rows))} rows, ${format(Number(storage.nodes) / size)} B/entry), ${storage.checkpoints} checkpoints |`,
  );
  out();
  out(`Proofs against the signed checkpoint of size ${format(proofs.checkpointSize)}, random documents and random \`from\`; sealer held meanwhile`);
  out();
  out(
    `| request | one at a time: n | p50 ms | p99 ms | max ms | proof hashes | node rows asked (mean / max) | rows fetched per request: archive_nodes by index / large tables by seq scan | proofs failing verification | ${CONNECTIONS} connections, ${PROOF_SECONDS} s: req/s | p50 ms | p99 ms | non-2xx |`,
  );
  out('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const run of proofs.runs) {
    const proof = run.proof
      ? `${format(run.proof.hashesMean, 1)} | ${format(run.proof.nodesMean, 1)} / ${run.proof.nodesMax} | ` +
        `${format(run.proof.indexRowsPerRequest, 1)} / ${format(run.proof.seqRowsPerRequest, 1)} | ${run.proof.failures}`
      : '– | – | – | –';
    out(
      `| ${run.name} | ${format(run.requests)} | ${format(run.p50, 2)} | ${format(run.p99, 2)} | ${format(run.max, 1)} | ${proof} | ` +
        `${format(run.loadRps)} | ${run.loadP50} | ${run.loadP99} | ${run.loadNon2xx} |`,
    );
  }
  out();
  out(`log2(${format(size)}) = ${format(Math.log2(size), 1)}`);
  if (proofs.runs.some((run) => (run.proof?.failures ?? 0) > 0)) throw new Error('some proofs did not verify');
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`${signal}: cleaning up\n`);
    void cleanUp().finally(() => process.exit(130));
  });
}

main()
  .then(cleanUp)
  .catch(async (error: unknown) => {
    process.stderr.write(`archive bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await cleanUp();
    process.exit(1);
  });

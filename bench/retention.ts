/**
 * The retention purge of document_events at a scale a workstation holds, against what time-range
 * partitions would cost: `DATABASE_URL=postgres://…/scratch node --import @swc-node/register/esm-register bench/retention.ts`.
 * DATABASE_URL must name a scratch database of its own: the script migrates it, fills it, purges it and
 * drops what it made (the gateway's tables stay, emptied). The figures in docs/operations.md (Retention)
 * come from it.
 *
 * 1. Loads BENCH_EVENTS feed events (default 3,000,000) over 100 days, ids in time order as production
 *    writes them, in 20 sources, ten to a document; a tenth of them (two sources with a push endpoint) with
 *    a succeeded delivery and one attempt each.
 * 2. Copies the same events into a table partitioned by created_at into ten 10-day partitions, and
 *    detaches and drops the oldest three (30 % of the rows, whatever BENCH_PURGE_PERCENT says): time, WAL.
 * 3. Purges the oldest BENCH_PURGE_PERCENT (30) % of document_events exactly as the gateway does (the
 *    repository's statement, batches of RETENTION_BATCH, each its own transaction with the retention
 *    locks and counts), then VACUUMs the three tables (what autovacuum would do, unthrottled): time, WAL,
 *    sizes. Autovacuum is off for the three tables meanwhile, so that VACUUM's cost is measured apart.
 */
import 'reflect-metadata';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { runMigrations } from '../src/database/migrations-runner.js';
import { buildDataSourceOptions } from '../src/database/typeorm-options.js';
import { DocumentEventEntity } from '../src/documents/document-event.entity.js';
import { DocumentEventsRepository, PURGE_EVENTS } from '../src/documents/document-events.repository.js';
import { RETENTION_BATCH } from '../src/retention/retention.service.js';
import { RetentionRepository } from '../src/retention/retention.repository.js';

const URL = process.env.DATABASE_URL;
const EVENTS = Number(process.env.BENCH_EVENTS ?? 3_000_000);
const PURGE_PERCENT = Number(process.env.BENCH_PURGE_PERCENT ?? 30);
const DAYS = 100;
const CHUNK = 250_000;

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(2)} MB`;
const seconds = (ms: number) => (ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(1)} s`);

async function main(): Promise<void> {
  if (!URL) throw new Error('DATABASE_URL must name a scratch database');
  const dataSource = await new DataSource(buildDataSourceOptions(URL)).initialize();
  await runMigrations(dataSource);
  await dataSource.destroy();
  const c = new Client({ connectionString: URL });
  await c.connect();
  const one = async <T>(text: string, values: unknown[] = []) => (await c.query(text, values)).rows[0] as T;
  const wal = async () => BigInt((await one<{ lsn: string }>(`SELECT pg_current_wal_lsn() - '0/0'::pg_lsn AS lsn`)).lsn);
  const measure = async <T>(what: string, work: () => Promise<T>) => {
    const [w0, t0] = [await wal(), performance.now()];
    const result = await work();
    const [ms, walBytes] = [performance.now() - t0, Number((await wal()) - w0)];
    console.log(`${what}: ${seconds(ms)}, WAL ${mb(walBytes)}`);
    return { result, ms, walBytes };
  };
  const sizes = async (label: string) => {
    const row = await one<Record<string, string>>(
      `SELECT pg_table_size('document_events') AS heap, pg_indexes_size('document_events') AS indexes,
              pg_total_relation_size('outbound_deliveries') AS deliveries, pg_total_relation_size('outbound_delivery_attempts') AS attempts,
              (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'document_events') AS dead,
              (SELECT autovacuum_count FROM pg_stat_user_tables WHERE relname = 'document_events') AS autovacuums`,
    );
    console.log(
      `${label}: events heap ${mb(Number(row.heap))}, indexes ${mb(Number(row.indexes))}; deliveries ${mb(Number(row.deliveries))}, attempts ${mb(Number(row.attempts))}; dead rows ${row.dead}, autovacuums so far ${row.autovacuums}`,
    );
  };
  console.log(`PostgreSQL ${(await one<{ server_version: string }>('SHOW server_version')).server_version}, ${EVENTS} events, purge ${PURGE_PERCENT} %`);
  await c.query('TRUNCATE document_events, outbound_deliveries, outbound_delivery_attempts, webhook_endpoints, documents CASCADE');

  // 1. Load.
  await measure('load', async () => {
    await c.query(`INSERT INTO webhook_endpoints (source, url, event_types, secret)
                   SELECT 'src-' || s, 'https://client.example/hook', '{document.created,document.status_changed}', 'whsec_x' FROM generate_series(0, 1) s`);
    await c.query(
      `INSERT INTO documents (source, external_id, type, taxpayer_tax_id, taxpayer_name, taxpayer_country, issue_date, currency, total_amount, tax_amount, seq)
       SELECT 'src-' || (n % 20), 'INV-' || n, 'INVOICE', 'DE1', 'Muster GmbH', 'DE', '2026-01-01', 'EUR', 119, 19, n FROM generate_series(0, $1 - 1) n`,
      [Math.ceil(EVENTS / 10)],
    );
    for (let from = 0; from < EVENTS; from += CHUNK) {
      // One transaction per chunk (its own xid, as many transactions would have); the trigger writes the
      // deliveries of the two sources with an endpoint.
      await c.query(
        `INSERT INTO document_events (source, document_id, type, status, created_at)
         SELECT d.source, d.id, 'document.created', 'PENDING_PAYMENT', now() - make_interval(days => $3) + (n * make_interval(days => $3) / $2)
           FROM generate_series($1::bigint, LEAST($1::bigint + $4, $2) - 1) n JOIN documents d ON d.seq = n / 10 ORDER BY n`,
        [from, EVENTS, DAYS, CHUNK],
      );
    }
    await c.query(`UPDATE outbound_deliveries d SET created_at = e.created_at, status = 'succeeded', attempts = 1, last_attempt_at = e.created_at, next_attempt_at = NULL
                     FROM document_events e WHERE e.id = d.event_id`);
    await c.query(
      `INSERT INTO outbound_delivery_attempts (delivery_id, attempted_at, duration_ms, response_status) SELECT id, created_at, 40, 204 FROM outbound_deliveries`,
    );
    await c.query('VACUUM ANALYZE documents, document_events, outbound_deliveries, outbound_delivery_attempts');
    await c.query('CHECKPOINT');
  });
  // VACUUM is measured on its own below (autovacuum does the same work, throttled by its cost delay).
  for (const table of ['document_events', 'outbound_deliveries', 'outbound_delivery_attempts'])
    await c.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`);
  await sizes('loaded');

  // 2. Partitions by time: the same rows (before the purge changes them), ten partitions of 10 days.
  await c.query('DROP TABLE IF EXISTS bench_events_partitioned');
  await c.query(
    `CREATE TABLE bench_events_partitioned (LIKE document_events INCLUDING DEFAULTS, PRIMARY KEY (id, created_at)) PARTITION BY RANGE (created_at)`,
  );
  const start = (await one<{ start: Date }>(`SELECT date_trunc('day', now() - make_interval(days => $1)) AS start`, [DAYS])).start;
  for (let p = 0; p < 10; p++) {
    await c.query(
      `CREATE TABLE bench_events_p${p} PARTITION OF bench_events_partitioned FOR VALUES FROM ($1::timestamptz + make_interval(days => ${p * 10}))
         TO (${p === 9 ? 'MAXVALUE' : `$1::timestamptz + make_interval(days => ${(p + 1) * 10})`})`.replace(/\$1/g, `'${start.toISOString()}'`),
    );
  }
  await c.query(`CREATE INDEX ON bench_events_partitioned (source, xid, id)`);
  await c.query(`CREATE INDEX ON bench_events_partitioned (document_id)`);
  await measure('copy the events into the partitioned table', async () => {
    await c.query(`INSERT INTO bench_events_partitioned SELECT * FROM document_events`);
    await c.query('VACUUM ANALYZE bench_events_partitioned');
    await c.query('CHECKPOINT');
  });
  const partitionRows = await one<{ n: string }>(
    `SELECT count(*) AS n FROM bench_events_partitioned WHERE created_at < $1::timestamptz + interval '30 days'`.replace('$1', `'${start.toISOString()}'`),
  );
  console.log(`  the three oldest partitions hold ${partitionRows.n} rows`);
  await measure('DETACH PARTITION CONCURRENTLY of the three oldest', async () => {
    for (let p = 0; p < 3; p++) await c.query(`ALTER TABLE bench_events_partitioned DETACH PARTITION bench_events_p${p} CONCURRENTLY`);
  });
  await measure('DROP TABLE of the three detached partitions', () => c.query('DROP TABLE bench_events_p0, bench_events_p1, bench_events_p2'));
  await c.query('DROP TABLE bench_events_partitioned');
  await c.query('CHECKPOINT');

  // 3. The gateway's batched purge; first one batch of it under EXPLAIN ANALYZE, rolled back: where its time goes.
  const olderThan = `P${Math.round(DAYS * (1 - PURGE_PERCENT / 100))}D`;
  await c.query('BEGIN');
  await c.query(`PREPARE purge_batch AS ${PURGE_EVENTS}`);
  const plan = await c.query(`EXPLAIN (ANALYZE, BUFFERS, WAL, FORMAT JSON) EXECUTE purge_batch('0', '${olderThan}', ${RETENTION_BATCH})`);
  await c.query('ROLLBACK');
  await c.query('DEALLOCATE ALL');
  const explained = plan.rows[0]['QUERY PLAN'][0];
  console.log(
    `one batch under EXPLAIN ANALYZE: ${explained['Execution Time'].toFixed(0)} ms, WAL ${mb(explained.Plan['WAL Bytes'] ?? 0)}; ` +
      (explained.Triggers ?? [])
        .map((t: { 'Trigger Name': string; Time: number; Calls: number }) => `${t['Trigger Name']} ${t.Time.toFixed(0)} ms for ${t.Calls} rows`)
        .join(', '),
  );
  const db = await new DataSource(
    buildDataSourceOptions(URL, { poolSize: 2, lifetimeSeconds: 3600, timeouts: { statementMs: 60000, lockMs: 2000 } }),
  ).initialize();
  const events = new DocumentEventsRepository(db.getRepository(DocumentEventEntity));
  const locks = new RetentionRepository();
  const batchMs: number[] = [];
  const purged = new Map<string, number>();
  const purge = await measure(`batched purge of the events older than ${olderThan} (batches of ${RETENTION_BATCH})`, async () => {
    let after = '0';
    for (;;) {
      const t0 = performance.now();
      const batch = await db.transaction(async (tx) => {
        if (!(await locks.tryLock(tx, ['document_events', 'outbound_deliveries', 'outbound_delivery_attempts']))) throw new Error('locked');
        const { result, deleted } = await locks.counting(tx, () => events.purge(tx, { olderThan, after, limit: RETENTION_BATCH }));
        for (const [table, rows] of deleted) purged.set(table, (purged.get(table) ?? 0) + rows);
        return result;
      });
      batchMs.push(performance.now() - t0);
      if (!batch.more || batch.last === null) return;
      after = batch.last;
    }
  });
  await db.destroy();
  const sorted = [...batchMs].sort((x, y) => x - y);
  const rows = [...purged.values()].reduce((x, y) => x + y, 0);
  console.log(
    `  ${batchMs.length} batches, purged ${JSON.stringify(Object.fromEntries(purged))}; per batch p50 ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} ms, ` +
      `p95 ${sorted[Math.floor(sorted.length * 0.95)].toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms; ` +
      `${Math.round(purged.get('document_events')! / (purge.ms / 1000))} events/s; WAL ${(purge.walBytes / purged.get('document_events')!).toFixed(0)} B per event, ${(purge.walBytes / rows).toFixed(0)} B per row`,
  );
  await sizes('after the purge');
  for (const table of ['document_events', 'outbound_deliveries', 'outbound_delivery_attempts']) {
    await measure(`VACUUM ${table}`, () => c.query(`VACUUM ${table}`));
  }
  await sizes('after VACUUM');

  for (const table of ['document_events', 'outbound_deliveries', 'outbound_delivery_attempts'])
    await c.query(`ALTER TABLE ${table} RESET (autovacuum_enabled)`);
  await c.query('TRUNCATE document_events, outbound_deliveries, outbound_delivery_attempts, webhook_endpoints, documents CASCADE');
  await c.end();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

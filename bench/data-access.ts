/**
 * `npm run bench:data-access`: what each way of reaching PostgreSQL costs the gateway's process, to choose
 * per path (docs/performance.md, "Data access, per path"). Each way reads one document by id (and writes
 * one audit entry), 32 at a time, for ROUNDS rounds alternating the ways; reported per operation: the
 * process's CPU (user + system) and the time. pg's own pool with a named statement is the reference (no
 * ORM at all); the others go through the gateway's TypeORM data source, built as the application builds it.
 * DATABASE_URL names a server; without it, an embedded cluster in a temporary directory.
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'pg';
import { DataSource, Repository } from 'typeorm';
import { AuditLogEntity } from '../src/admin/audit-log.entity.js';
import { runMigrations } from '../src/database/migrations-runner.js';
import { PreparedStatement } from '../src/database/prepared-statement.js';
import { startEmbeddedPostgres } from '../src/database/embedded-postgres.js';
import { removeDataDir } from '../src/database/embedded-postgres-layout.js';
import { buildDataSourceOptions } from '../src/database/typeorm-options.js';
import { DocumentEntity } from '../src/documents/document.entity.js';

const OPERATIONS = Number(process.env.DATA_ACCESS_OPERATIONS ?? 20_000);
const ROUNDS = Number(process.env.DATA_ACCESS_ROUNDS ?? 3);
const CONCURRENCY = 32;
const POOL_SIZE = 10;

async function database(): Promise<{ url: string; stop: () => Promise<void> }> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, stop: async () => undefined };
  const dataDir = await mkdtemp(join(tmpdir(), 'gateway-data-access-'));
  const cluster = await startEmbeddedPostgres({ dataDir });
  return {
    url: cluster.url,
    stop: async () => {
      await cluster.stop();
      await removeDataDir(dataDir);
    },
  };
}

/** `operation` OPERATIONS times, CONCURRENCY at once: CPU µs and wall µs per operation. */
async function measure(operation: (i: number) => Promise<unknown>): Promise<{ cpu: number; wall: number }> {
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < OPERATIONS) await operation(next++);
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { cpu: (cpu.user + cpu.system) / OPERATIONS, wall: ((performance.now() - t0) * 1000) / OPERATIONS };
}

async function main(): Promise<void> {
  const db = await database();
  const migrations = await new DataSource(buildDataSourceOptions(db.url)).initialize();
  await runMigrations(migrations);
  await migrations.destroy();
  const dataSource = await new DataSource(buildDataSourceOptions(db.url, { poolSize: POOL_SIZE, lifetimeSeconds: 3600 })).initialize();
  const pool = new Pool({ connectionString: db.url, max: POOL_SIZE });
  try {
    const documents: Repository<DocumentEntity> = dataSource.getRepository(DocumentEntity);
    const audit: Repository<AuditLogEntity> = dataSource.getRepository(AuditLogEntity);
    const ids = (
      await pool.query<{ id: string }>(
        `INSERT INTO documents (source, external_id, type, taxpayer_tax_id, taxpayer_name, taxpayer_country, issue_date, currency, total_amount, tax_amount)
         SELECT 'bench', 'doc-' || n, 'INVOICE', 'DE123456789', 'Muster GmbH', 'DE', '2026-11-20', 'EUR', 119, 19 FROM generate_series(1, 1000) n RETURNING id`,
      )
    ).rows.map((row) => row.id);
    const idOf = (i: number) => ids[i % ids.length];
    const text = 'SELECT * FROM documents WHERE id = $1';
    const prepared = new PreparedStatement('bench-document-find', text);
    const entry = () => ({
      action: 'api_key.created' as const,
      keyId: null,
      source: 'bench',
      remoteAddress: '127.0.0.1',
      actorType: 'bootstrap' as const,
      actorAdminId: null,
      actorEmail: null,
      targetType: null,
      targetId: randomUUID(),
    });
    const insertText = 'INSERT INTO admin_audit_log (action, source, remote_address, actor_type, target_id) VALUES ($1, $2, $3, $4, $5)';
    const preparedInsert = new PreparedStatement('bench-audit-insert', insertText);
    const ways: Array<[string, (i: number) => Promise<unknown>]> = [
      ['read: pg pool, named statement (no ORM)', (i) => pool.query({ name: 'bench-find', text, values: [idOf(i)] })],
      ['read: prepared statement on a QueryRunner connection', (i) => prepared.run(dataSource.manager, [idOf(i)])],
      ['read: dataSource.query', (i) => dataSource.query(text, [idOf(i)])],
      ['read: Repository.findOneBy', (i) => documents.findOneBy({ id: idOf(i) })],
      [
        'read: QueryBuilder getOne',
        (i) =>
          documents
            .createQueryBuilder('d')
            .where('d.id = :id', { id: idOf(i) })
            .getOne(),
      ],
      [
        'write: pg pool, named statement (no ORM)',
        () => {
          const e = entry();
          return pool.query({ name: 'bench-insert', text: insertText, values: [e.action, e.source, e.remoteAddress, e.actorType, e.targetId] });
        },
      ],
      [
        'write: prepared statement on a QueryRunner connection',
        () => {
          const e = entry();
          return preparedInsert.run(dataSource.manager, [e.action, e.source, e.remoteAddress, e.actorType, e.targetId]);
        },
      ],
      ['write: Repository.insert', () => audit.insert(entry())],
    ];
    const results = new Map<string, Array<{ cpu: number; wall: number }>>(ways.map(([name]) => [name, []]));
    for (const [, operation] of ways) await measure(operation);
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, operation] of round % 2 ? [...ways].reverse() : ways) results.get(name)!.push(await measure(operation));
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    const reference = (kind: string) => median(results.get(`${kind}: pg pool, named statement (no ORM)`)!.map((r) => r.cpu));
    process.stdout.write(`\n${OPERATIONS} operations, ${CONCURRENCY} at once, pool ${POOL_SIZE}, median of ${ROUNDS} rounds, per operation\n\n`);
    process.stdout.write('| way | CPU µs | × pg alone | wall µs |\n|---|---:|---:|---:|\n');
    for (const [name, samples] of results) {
      const cpu = median(samples.map((s) => s.cpu));
      process.stdout.write(
        `| ${name} | ${cpu.toFixed(0)} | ${(cpu / reference(name.split(':')[0])).toFixed(2)} | ${median(samples.map((s) => s.wall)).toFixed(0)} |\n`,
      );
    }
  } finally {
    await pool.end();
    await dataSource.destroy();
    await db.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`data-access bench failed: ${String(error)}\n`);
  process.exit(1);
});

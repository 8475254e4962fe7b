import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { Client, QueryConfig } from 'pg';
import { DataSource } from 'typeorm';
import { freePort } from '../../src/database/embedded-postgres.js';
import { removeDataDir } from '../../src/database/embedded-postgres-layout.js';
import { revertLastMigration, runMigrations } from '../../src/database/migrations-runner.js';
import { buildDataSourceOptions } from '../../src/database/typeorm-options.js';
import { createTestDatabase, dropTestDatabase } from '../support/database.js';
import { documentBody, newSourceWithKey, postDocument } from '../support/factories.js';
import { startClusterProcess, waitFor } from '../support/processes.js';
import { startTestApp, TestApp } from '../support/test-app.js';

describe('database', () => {
  describe('readiness while the database goes away and comes back', () => {
    let dataDir: string;
    let cluster: Awaited<ReturnType<typeof startClusterProcess>>;
    let port: number;
    let t: TestApp;

    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'gateway-outage-'));
      port = await freePort();
      cluster = await startClusterProcess(dataDir, port);
      t = await startTestApp({ databaseUrl: cluster.url });
    });
    afterAll(async () => {
      await t.close();
      await cluster.stop();
      await removeDataDir(dataDir);
    });

    it('answers 200, then 503 SERVICE_UNAVAILABLE with Retry-After while stopped, then 200 again', async () => {
      expect((await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode).toBe(200);

      await cluster.stop();
      const down = await t.app.inject({ method: 'GET', url: '/health/ready' });
      expect(down.statusCode).toBe(503);
      expect(down.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(down.headers['retry-after']).toBe('5');
      expect(down.json()).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', instance: '/health/ready' });
      expect(down.body).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|password/);
      // Liveness is about the process, not its dependencies.
      expect((await t.app.inject({ method: 'GET', url: '/health/live' })).statusCode).toBe(200);

      cluster = await startClusterProcess(dataDir, port);
      await waitFor(async () => (await t.app.inject({ method: 'GET', url: '/health/ready' })).statusCode === 200, 'readiness after restart');
    });
  });

  describe('migrations', () => {
    let url: string;
    let dataSource: DataSource;

    beforeAll(async () => {
      url = await createTestDatabase();
      dataSource = await new DataSource(buildDataSourceOptions(url)).initialize();
    });
    afterAll(async () => {
      await dataSource.destroy();
      await dropTestDatabase(url);
    });

    const tables = async (ds: DataSource) =>
      (await ds.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`)).map(
        (r: { table_name: string }) => r.table_name,
      );
    const applied = async (ds: DataSource) => (await ds.query('SELECT name FROM migrations ORDER BY id')).map((r: { name: string }) => r.name);

    it('apply once when several instances run them at the same time, under the advisory lock', async () => {
      const others = await Promise.all([1, 2].map(() => new DataSource(buildDataSourceOptions(url)).initialize()));
      try {
        const runs = await Promise.all([dataSource, ...others].map((ds) => runMigrations(ds)));
        const total = dataSource.migrations.length;
        expect(total).toBeGreaterThan(0);
        expect(runs.map((r) => r.length).reduce((a, b) => a + b, 0)).toBe(total);
        expect(await applied(dataSource)).toHaveLength(total);
        expect(await dataSource.showMigrations()).toBe(false);
      } finally {
        await Promise.all(others.map((ds) => ds.destroy()));
      }
    });

    it('revert one by one down to an empty schema, and apply again', async () => {
      const total = dataSource.migrations.length;
      const schema = await tables(dataSource);
      for (let i = 0; i < total; i++) await revertLastMigration(dataSource);
      expect(await applied(dataSource)).toEqual([]);
      expect(await tables(dataSource)).toEqual(['migrations']);

      await runMigrations(dataSource);
      expect(await applied(dataSource)).toHaveLength(total);
      expect(await tables(dataSource)).toEqual(schema);
    });

    // Every decision is made in TypeScript (docs/architecture.md, "One shape for every write"): the schema keeps
    // no function but the feed's trigger function, and an instance of the release before finds its functions gone.
    it('leave no database function but trigger functions', async () => {
      const functions = await dataSource.query(
        `SELECT p.proname AS name, pg_get_function_result(p.oid) AS returns FROM pg_proc p
          WHERE p.pronamespace = 'public'::regnamespace ORDER BY 1`,
      );
      expect(functions).toEqual([
        { name: 'archive_append_only', returns: 'trigger' },
        { name: 'enqueue_outbound_delivery', returns: 'trigger' },
      ]);
      expect(await dataSource.query(`SELECT typname FROM pg_type WHERE typname = 'idempotency_claim_outcome'`)).toEqual([]);
    });

    // migration:generate diffs the entities against the database: they must describe what the migrations
    // built, or the next generated migration would undo part of it.
    it('leave a schema the entities describe, but for the feed column TypeORM has no type for', async () => {
      const sql = await dataSource.driver.createSchemaBuilder().log();
      expect(sql.upQueries.map((q) => q.query)).toEqual(['ALTER TABLE "document_events" DROP COLUMN "xid"']);
    });
  });

  describe('pooled connections', () => {
    // A connection keeps the plans of its prepared statements, made for the tables' sizes when it first ran
    // them; replacing it lets them be planned again for the tables as they are now.
    it('are replaced after DB_POOL_CONNECTION_LIFETIME_SECONDS, and requests go on over new ones', async () => {
      const t = await startTestApp({ env: { DB_POOL_CONNECTION_LIFETIME_SECONDS: '1' } });
      try {
        const key = await newSourceWithKey(t.app);
        const me = () => t.app.inject({ method: 'GET', url: '/api/v1/me', headers: { 'x-api-key': key.key } });
        const pooled = async (): Promise<number[]> =>
          (await t.db.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tax-document-gateway'`)).rows.map(
            (row: { pid: number }) => row.pid,
          );
        expect((await Promise.all(Array.from({ length: 5 }, me))).map((res) => res.statusCode)).toEqual(Array(5).fill(200));
        const first = await pooled();
        expect(first.length).toBeGreaterThan(0);

        await waitFor(async () => (await pooled()).every((pid) => !first.includes(pid)), 'the first connections replaced');
        expect((await me()).statusCode).toBe(200);
        const next = await pooled();
        expect(next.length).toBeGreaterThan(0);
        expect(next.filter((pid) => first.includes(pid))).toEqual([]);
      } finally {
        await t.close();
      }
    });
  });

  describe('generic plans', () => {
    // A pooled connection may keep the plan it made of a statement while a table was empty for as long as the
    // connection lives; what that plan reads must not grow with the table.
    // Each per-request look-up: the prepared statement's name, a request that sends it, the table it reads
    // (empty: the test's database is new), rows to add, its parameters.
    const cases: Array<[string, string, (t: TestApp, key: string, source: string) => Promise<unknown>, string, string, (source: string) => string[]]> = [
      [
        "an idempotency key's record, looked up as a request arrives",
        'idempotency-record',
        (t, key, source) => postDocument(t.app, key, documentBody(source)),
        'idempotency_records',
        `INSERT INTO idempotency_records (source, idempotency_key, fingerprint, response_status, response_body, expires_at)
               SELECT $1, 'key-' || n, repeat('0', 64), 201, '{}', now() + interval '1 day' FROM generate_series(1, 5000) n`,
        (source) => ['not-stored-key', source],
      ],
      [
        'a document by id',
        'document-find',
        (t, key) => t.app.inject({ method: 'GET', url: '/api/v1/documents/9b2f0c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f', headers: { 'x-api-key': key } }),
        'documents',
        `INSERT INTO documents (id, source, external_id, type, taxpayer_tax_id, taxpayer_name, taxpayer_country, issue_date, currency, total_amount, tax_amount, created_at, updated_at)
               SELECT gen_random_uuid(), $1, 'doc-' || n, 'INVOICE', 'DE123456789', 'Muster GmbH', 'DE', '2026-11-20', 'EUR', 119, 19, now(), now() FROM generate_series(1, 5000) n`,
        () => ['9b2f0c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f'],
      ],
    ];

    /** The text of the prepared statement `name`, as the application sends it during `work` (pg's Client#query, its documented entry point). */
    async function statementText(name: string, work: () => Promise<unknown>): Promise<string> {
      let text: string | undefined;
      const original = Client.prototype.query;
      const spy = jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
        const config = args[0] as string | QueryConfig;
        if (typeof config !== 'string' && config.name === name) text = config.text;
        return (original as (...a: unknown[]) => unknown).apply(this, args);
      });
      try {
        await work();
      } finally {
        spy.mockRestore();
      }
      if (text === undefined) throw new Error(`The application sent no statement named ${name}`);
      return text;
    }

    it.each(cases)(
      'of %s, made while its table was empty, read a few pages once it holds thousands',
      async (_name, statement, request, table, fill, parameters) => {
        const t = await startTestApp();
        const client = t.db;
        try {
          const { key, source } = await newSourceWithKey(t.app);
          const text = await statementText(statement, () => request(t, key, source));
          // The test's database is new: the table holds no row but what the request wrote, removed (no TRUNCATE,
          // whose exclusive locks could deadlock with the application's background work on the tables it cascades to).
          await client.query(`DELETE FROM ${table} WHERE source = $1`, [source]);
          await client.query('BEGIN');
          await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
          await client.query(`PREPARE lookup AS ${text}`);
          const execute = `EXECUTE lookup(${parameters(source)
            .map((p) => `'${p}'`)
            .join(', ')})`;
          // Planned and run while the table is empty.
          await client.query(execute);

          await client.query(fill, [source]);
          const [
            {
              'QUERY PLAN': [plan],
            },
          ] = (await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${execute}`)).rows;
          expect(plan.Plan['Shared Hit Blocks'] + plan.Plan['Shared Read Blocks']).toBeLessThan(10);
        } finally {
          await client.query('ROLLBACK');
          await client.query('DEALLOCATE ALL');
          await t.close();
        }
      },
    );
  });
});

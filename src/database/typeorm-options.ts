import pg from 'pg';
import { DataSourceOptions } from 'typeorm';
import { AfterCommitSubscriber } from './after-commit.js';
import type { ConnectionGate } from './connection-gate.js';
import { ConnectionSettings, poolConfig } from './connection-options.js';
import { ENTITIES } from './entities.js';
import { MIGRATIONS } from './migrations/index.js';
import { withOwnSockets } from './sent-together.js';

/** What the data source needs beyond the address: the request pool's settings and, for metrics, a view of its pool. */
export interface PoolOptions extends Omit<ConnectionSettings, 'url'> {
  /** Called with the pg pool TypeORM opens, once, so its counters can be reported (PoolStatistics). */
  onPool?: (pool: pg.Pool) => void;
  /** What TypeORM's connection requests go through while the database does not answer. */
  gate?: ConnectionGate;
}

/**
 * pg as TypeORM's driver (its documented `driver` option), with one difference: the pool TypeORM
 * constructs, its one pool, is also handed to `onPool`, and TypeORM gets it through the gate. TypeORM
 * keeps its pool to itself, and the metrics need pg-pool's counters. pg itself is left as it is.
 */
function observedDriver({ onPool, gate }: Pick<PoolOptions, 'onPool' | 'gate'>): typeof pg {
  const Pool = new Proxy(pg.Pool, {
    construct(target, [config]: [pg.PoolConfig], newTarget) {
      const Client = withOwnSockets(gate ? gate.watchedClient() : pg.Client);
      const pool = Reflect.construct(target, [{ ...config, Client }], newTarget) as pg.Pool;
      onPool?.(pool);
      return gate ? gate.guard(pool) : pool;
    },
  });
  return Object.assign(Object.create(pg) as typeof pg, { Pool });
}

/**
 * The one description of the data source: the application's (`pool` given: the request pool, used by
 * every repository), the CLI's (a small pool without request bounds), and the migrations' (no `pool`:
 * two connections without request bounds, for `npm run migration:*`, ormconfig.ts and the migrations
 * run at start, which may rightly take longer than a request). Schema changes only ever come from
 * migrations: never `synchronize`.
 */
export function buildDataSourceOptions(url: string, pool?: PoolOptions): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    subscribers: [AfterCommitSubscriber],
    migrationsTableName: 'migrations',
    // A null or undefined value in a find's or an update's criteria is an error, never a condition left out
    // (which would widen the query): TypeORM 1's default, stated here because 0.3 did the opposite.
    invalidWhereValuesBehavior: { null: 'throw', undefined: 'throw' },
    migrationsTransactionMode: 'each',
    synchronize: false,
    migrationsRun: false,
    logging: false,
    // gen_random_uuid() is built into PostgreSQL 13+: no extension to install (or to be allowed to).
    uuidExtension: 'pgcrypto',
    installExtensions: false,
    // Every failure is the caller's to handle; an idle connection that fails is simply dropped by pg-pool.
    poolErrorHandler: () => undefined,
    ...(pool
      ? {
          extra: poolConfig({ url, ...pool }),
          ...(pool.onPool || pool.gate ? { driver: observedDriver(pool) } : {}),
        }
      : // Migrations hold the advisory lock on one connection and run on another. A connection attempt
        // is bounded as the pool's are, so a start that waits for the database retries on time.
        { extra: { max: 2, application_name: 'tax-document-gateway-migrations', options: '-c DateStyle=ISO', connectionTimeoutMillis: 3000 } }),
  };
}

import { DynamicModule, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import { describeFailure, isDatabaseUnavailable } from '../common/database-failure.js';
import { AppConfig } from '../config/app-config.js';
import { ConnectionGate } from './connection-gate.js';
import { clientConfig } from './connection-options.js';
import { runMigrations } from './migrations-runner.js';
import { PoolStatistics } from './pool-statistics.js';
import { Transactions } from './transaction.js';
import { buildDataSourceOptions, PoolOptions } from './typeorm-options.js';

/** The database's address: DATABASE_URL, or the embedded cluster's, resolved before the module is built. */
export const DATABASE_URL = Symbol('DATABASE_URL');

const START_ATTEMPTS = 10;
const START_RETRY_MS = 2000;

/**
 * Runs `start` until the database can be reached (it may be starting beside us), START_ATTEMPTS times
 * at most. @nestjs/typeorm could retry too, but it logs every attempt as an error with its stack.
 */
async function whenReachable<T>(logger: Logger, start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (!isDatabaseUnavailable(error) || attempt === START_ATTEMPTS) throw error;
      logger.warn({ ...describeFailure(error), attempt }, `Database not reachable yet; retrying in ${START_RETRY_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, START_RETRY_MS));
    }
  }
}

/**
 * Migrations run on a data source of their own, closed before the application's opens: without the
 * request pool's bounds, since a migration, or the wait for another instance's, may rightly take longer
 * than a request.
 */
async function migrate(url: string, logger: Logger): Promise<void> {
  const dataSource = await new DataSource(buildDataSourceOptions(url)).initialize();
  try {
    const applied = await runMigrations(dataSource);
    logger.log(`Migrations applied: ${applied.length ? applied.map((m) => m.name).join(', ') : 'none pending'}`);
  } finally {
    await dataSource.destroy();
  }
}

/** The request pool's settings. */
export function requestPool(config: AppConfig): Omit<PoolOptions, 'onPool' | 'gate'> {
  return {
    poolSize: config.DB_POOL_SIZE,
    lifetimeSeconds: config.DB_POOL_CONNECTION_LIFETIME_SECONDS,
    timeouts: { statementMs: config.DB_STATEMENT_TIMEOUT_MS, lockMs: config.DB_LOCK_TIMEOUT_MS },
  };
}

/**
 * The gateway's one data source, through @nestjs/typeorm: migrations first (unless MIGRATIONS_RUN=false),
 * then TypeORM's pool, the request pool, which every repository uses. Feature modules register their
 * entities with TypeOrmModule.forFeature.
 */
@Module({})
export class DatabaseModule {
  /** `pool`: other settings than the request pool's (the CLI's); `migrate`: false where migrations were run already. */
  static forRoot({
    config,
    url,
    pool = requestPool(config),
    migrate: runMigrationsFirst = config.MIGRATIONS_RUN,
  }: {
    config: AppConfig;
    url: string;
    pool?: Omit<PoolOptions, 'onPool' | 'gate'>;
    migrate?: boolean;
  }): DynamicModule {
    const statistics = new PoolStatistics(pool.poolSize);
    const gate = new ConnectionGate(clientConfig({ url, ...pool }));
    const logger = new Logger('Database');
    return {
      module: DatabaseModule,
      global: true,
      imports: [
        TypeOrmModule.forRootAsync({
          // The start-up retry is whenReachable's; a failure it gives up on is final.
          useFactory: () => ({ ...buildDataSourceOptions(url, { ...pool, onPool: (p) => statistics.observe(p), gate }), toRetry: () => false }),
          dataSourceFactory: (options) =>
            whenReachable(logger, async () => {
              if (runMigrationsFirst) await migrate(url, logger);
              return new DataSource(options as DataSourceOptions).initialize();
            }),
        }),
      ],
      providers: [
        { provide: DATABASE_URL, useValue: url },
        { provide: PoolStatistics, useValue: statistics },
        { provide: ConnectionGate, useValue: gate },
        Transactions,
      ],
      exports: [DATABASE_URL, PoolStatistics, ConnectionGate, Transactions],
    };
  }
}

import { Global, Logger, Module, Provider } from '@nestjs/common';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { isDatabaseUnavailable } from '../common/database-failure';
import { AppConfig } from '../config/app-config';
import { ConnectionSettings, listenerConfig, poolConfig } from './connection-options';
import { Database } from './database';
import { runMigrations } from './migrations-runner';
import { buildDataSourceOptions } from './typeorm-options';

/** The database's address: DATABASE_URL, or the embedded cluster's, resolved before the module is built. */
export const DATABASE_URL = Symbol('DATABASE_URL');

async function migrate(url: string, logger: Logger): Promise<void> {
  const dataSource = await new DataSource(buildDataSourceOptions(url)).initialize();
  try {
    const applied = await runMigrations(dataSource);
    logger.log(`Migrations applied: ${applied.length ? applied.map((m) => m.name).join(', ') : 'none pending'}`);
  } finally {
    await dataSource.destroy();
  }
}

const START_ATTEMPTS = 10;
const START_RETRY_MS = 2000;

/** Migrations at start, retried while the database cannot be reached yet (it may be starting beside us). */
async function migrateWhenReachable(url: string, logger: Logger): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrate(url, logger);
    } catch (error) {
      if (!isDatabaseUnavailable(error) || attempt === START_ATTEMPTS) throw error;
      logger.warn({ cause: (error as { code?: unknown }).code ?? (error as Error).message, attempt }, `Database not reachable yet; retrying in ${START_RETRY_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, START_RETRY_MS));
    }
  }
}

/** A Database over a pool of its own (the gateway's request pool, or the CLI's small one). */
export function createDatabase(settings: ConnectionSettings): Database {
  const pool = new Pool(poolConfig(settings));
  // An idle connection that fails is dropped by pg-pool; without a listener its error would end the process.
  pool.on('error', () => undefined);
  return new Database(pool, { lifetimeSeconds: settings.lifetimeSeconds, max: settings.poolSize, listenerConfig: listenerConfig(settings) });
}

/** Builds the Database of the gateway: migrations first (unless MIGRATIONS_RUN=false), then the request pool. */
export async function openDatabase(config: AppConfig, url: string): Promise<Database> {
  if (config.MIGRATIONS_RUN) await migrateWhenReachable(url, new Logger('Database'));
  return createDatabase({
    url,
    poolSize: config.DB_POOL_SIZE,
    lifetimeSeconds: config.DB_POOL_CONNECTION_LIFETIME_SECONDS,
    timeouts: { statementMs: config.DB_STATEMENT_TIMEOUT_MS, lockMs: config.DB_LOCK_TIMEOUT_MS },
  });
}

const databaseProvider: Provider = {
  provide: Database,
  inject: [AppConfig, DATABASE_URL],
  useFactory: (config: AppConfig, url: string) => openDatabase(config, url),
};

@Global()
@Module({})
export class DatabaseModule {
  static forRoot(url: string) {
    return { module: DatabaseModule, providers: [{ provide: DATABASE_URL, useValue: url }, databaseProvider], exports: [Database, DATABASE_URL] };
  }
}

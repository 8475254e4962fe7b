import { join } from 'node:path';
import { DataSourceOptions } from 'typeorm';

export interface DatabaseSettings {
  url: string;
  poolSize?: number;
}

/**
 * The one TypeORM configuration: the application, ormconfig.ts (TypeORM CLI) and the migration
 * runner all build their DataSource from here. Schema changes only ever come from migrations.
 */
export function buildDataSourceOptions({ url, poolSize = 10 }: DatabaseSettings): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: [join(__dirname, '..', '**', '*.entity.{ts,js}')],
    migrations: [join(__dirname, 'migrations', '*.{ts,js}')],
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    migrationsRun: false,
    logging: false,
    // gen_random_uuid() is built into PostgreSQL 13+: no extension to install (or to be allowed to).
    uuidExtension: 'pgcrypto',
    installExtensions: false,
    extra: {
      max: poolSize,
      // Fail fast while the database is unreachable, so requests get a 503 instead of hanging.
      connectionTimeoutMillis: 3000,
      application_name: 'tax-document-gateway',
      // The lease on every claim: a transaction whose process hangs (rather than dies, which rolls
      // back at once) is ended by the server, freeing its idempotency key and locks.
      options: '-c idle_in_transaction_session_timeout=30000',
    },
  };
}

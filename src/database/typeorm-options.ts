import { join } from 'node:path';
import { DataSourceOptions } from 'typeorm';

/**
 * TypeORM keeps the schema: the entities describe it and the migrations make it. The application, the
 * migration runner and ormconfig.ts (TypeORM CLI) build their data source here; it is used for
 * migrations only, never for requests (see Database). Schema changes only ever come from migrations.
 */
export function buildDataSourceOptions(url: string): DataSourceOptions {
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
    // Migrations hold the advisory lock on one connection and run on another.
    extra: { max: 2, application_name: 'tax-document-gateway-migrations' },
  };
}

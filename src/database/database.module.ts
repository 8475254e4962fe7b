import { DynamicModule, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { runMigrations } from './migrations-runner';
import { buildDataSourceOptions } from './typeorm-options';

async function migrate(url: string, logger: Logger): Promise<void> {
  const dataSource = await new DataSource(buildDataSourceOptions({ url, poolSize: 2 })).initialize();
  try {
    const applied = await runMigrations(dataSource);
    logger.log(`Migrations applied: ${applied.length ? applied.map((m) => m.name).join(', ') : 'none pending'}`);
  } finally {
    await dataSource.destroy();
  }
}

@Module({})
export class DatabaseModule {
  /** `url` is DATABASE_URL or the embedded cluster's address, resolved before the module is built. */
  static forRoot(config: AppConfig, url: string): DynamicModule {
    const logger = new Logger('Database');
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: () => ({
            ...buildDataSourceOptions({
              url,
              poolSize: config.DB_POOL_SIZE,
              connectionLifetimeSeconds: config.DB_POOL_CONNECTION_LIFETIME_SECONDS,
              timeouts: { statementMs: config.DB_STATEMENT_TIMEOUT_MS, lockMs: config.DB_LOCK_TIMEOUT_MS },
            }),
            retryAttempts: 10,
            retryDelay: 2000,
          }),
          dataSourceFactory: async (options) => {
            // Migrations get connections of their own, without the request timeouts.
            if (config.MIGRATIONS_RUN) await migrate(url, logger);
            return new DataSource(options!).initialize();
          },
        }),
      ],
    };
  }
}

import { DynamicModule, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { runMigrations } from './migrations-runner';
import { buildDataSourceOptions } from './typeorm-options';

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
            ...buildDataSourceOptions({ url, poolSize: config.DB_POOL_SIZE }),
            retryAttempts: 10,
            retryDelay: 2000,
          }),
          dataSourceFactory: async (options) => {
            const dataSource = await new DataSource(options!).initialize();
            if (config.MIGRATIONS_RUN) {
              const applied = await runMigrations(dataSource);
              logger.log(`Migrations applied: ${applied.length ? applied.map((m) => m.name).join(', ') : 'none pending'}`);
            }
            return dataSource;
          },
        }),
      ],
    };
  }
}

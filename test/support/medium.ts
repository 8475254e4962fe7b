import { DataSource } from 'typeorm';
import { Database } from '../../src/database/database';
import { createDatabase } from '../../src/database/database.module';
import { runMigrations } from '../../src/database/migrations-runner';
import { buildDataSourceOptions } from '../../src/database/typeorm-options';
import { createTestDatabase, dropTestDatabase } from './database';

export interface MediumDatabase {
  db: Database;
  url: string;
  close(): Promise<void>;
}

/**
 * A fresh database with the real migrations and the gateway's own Database over it, for tests of
 * repositories and the data layer without the rest of the application (the medium tier). `settings`
 * overrides the pool's (its size, timeouts).
 */
export async function mediumDatabase(settings: { poolSize?: number; timeouts?: { statementMs: number; lockMs: number } } = {}): Promise<MediumDatabase> {
  const url = await createTestDatabase();
  const dataSource = await new DataSource(buildDataSourceOptions(url)).initialize();
  try {
    await runMigrations(dataSource);
  } finally {
    await dataSource.destroy();
  }
  const db = createDatabase({ url, poolSize: settings.poolSize ?? 4, lifetimeSeconds: 60, timeouts: settings.timeouts });
  return {
    db,
    url,
    close: async () => {
      await db.onApplicationShutdown();
      await dropTestDatabase(url);
    },
  };
}

import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { ConfigValidationError, loadConfig } from '../config/app-config';
import { loadEnvFile } from '../startup/env-file';
import { locateDatabase } from './database-location';
import { revertLastMigration, runMigrations } from './migrations-runner';
import { buildDataSourceOptions } from './typeorm-options';

/**
 * `migration:run` / `migration:revert` as a deploy step, under the same advisory lock the application
 * takes at start. Against DATABASE_URL, or the embedded cluster under DATA_DIR when it is unset.
 */
async function main(command: string | undefined): Promise<void> {
  if (command !== 'run' && command !== 'revert') throw new Error('usage: migration-cli run|revert');
  loadEnvFile();
  const config = loadConfig();
  const database = await locateDatabase(config);
  const dataSource = await new DataSource(buildDataSourceOptions(database.url)).initialize();
  try {
    if (command === 'run') {
      const applied = await runMigrations(dataSource);
      process.stdout.write(applied.length ? `Applied: ${applied.map((m) => m.name).join(', ')}\n` : 'No pending migrations\n');
    } else {
      await revertLastMigration(dataSource);
      process.stdout.write('Reverted the last migration\n');
    }
  } finally {
    await dataSource.destroy();
    await database.release();
  }
}

main(process.argv[2]).catch((error: unknown) => {
  if (error instanceof ConfigValidationError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(78);
  }
  process.stderr.write(`Migration failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

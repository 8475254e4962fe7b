import { DataSource } from 'typeorm';
import { AdminApiKeysService } from '../admin/admin-api-keys.service';
import { AuditLogRepository } from '../admin/audit-log.repository';
import { AuditLogService } from '../admin/audit-log.service';
import { ApiKeysRepository } from '../auth/api-keys.repository';
import { ApiKeysService } from '../auth/api-keys.service';
import { KeyUsageRecorder } from '../auth/key-usage.recorder';
import { AppConfig } from '../config/app-config';
import { createDatabase } from '../database/database.module';
import { locateDatabase } from '../database/database-location';
import { runMigrations } from '../database/migrations-runner';
import { buildDataSourceOptions } from '../database/typeorm-options';

export interface OperatorDatabase {
  admin: AdminApiKeysService;
  close(): Promise<void>;
}

export class OperatorError extends Error {}

/**
 * The database the gateway would use (DATABASE_URL, else the PG* variables, else the embedded cluster
 * under DATA_DIR; one a running gateway owns is shared and left running), with the schema brought up to
 * date the way the gateway does it at start. Only a command that writes (`create: true`) may initialise a
 * new embedded cluster; reading from one that does not exist is an error, not an empty answer. The
 * services are wired by hand rather than through a Nest context: a few constructors, no bootstrap logging,
 * no retry loop, and a database that is down fails at once.
 */
export async function openOperatorDatabase(
  config: AppConfig,
  notice: (line: string) => void,
  { create }: { create: boolean },
): Promise<OperatorDatabase> {
  const database = await locateDatabase(config, { create });
  // On stderr with the other diagnostics: an operator with the wrong DATA_DIR sees it at once.
  notice(`Using ${database.description}`);
  const dataSource = new DataSource(buildDataSourceOptions(database.url));
  let db: ReturnType<typeof createDatabase> | undefined;
  const close = async () => {
    if (dataSource.isInitialized) await dataSource.destroy();
    await db?.onApplicationShutdown();
    await database.release();
  };
  try {
    await dataSource.initialize();
    if (config.MIGRATIONS_RUN) {
      const applied = await runMigrations(dataSource);
      if (applied.length) notice(`Applied migrations: ${applied.map((m) => m.name).join(', ')}`);
    } else if (await dataSource.showMigrations()) {
      throw new OperatorError(
        'The database schema is not up to date and MIGRATIONS_RUN=false: run the migrations first ' +
          '(npm run migration:run, or node dist/database/migration-cli.js run in the image).',
      );
    }
  } catch (error) {
    await close();
    throw error;
  }
  // Schema work done, the data source's connections go; the commands use the gateway's own data access.
  await dataSource.destroy();
  db = createDatabase({ url: database.url, poolSize: 2, lifetimeSeconds: 60, applicationName: 'tax-document-gateway-cli' });
  const keys = new ApiKeysRepository(db);
  const apiKeys = new ApiKeysService(db, keys, new KeyUsageRecorder(keys));
  return { admin: new AdminApiKeysService(db, apiKeys, new AuditLogService(new AuditLogRepository(db))), close };
}

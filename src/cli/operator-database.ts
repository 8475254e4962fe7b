import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { AdminApiKeysService } from '../admin/admin-api-keys.service.js';
import { AdminOperationsService } from '../admin/admin-operations.service.js';
import { AdminsService } from '../admin/admins.service.js';
import { archiveOrigin, archiveVerifierKey } from '../archive/archive-signer.js';
import { ArchiveVerifier } from '../archive/archive-verifier.js';
import { ArchiveRepository } from '../archive/archive.repository.js';
import { AppConfig } from '../config/app-config.js';
import { locateDatabase } from '../database/database-location.js';
import { runMigrations } from '../database/migrations-runner.js';
import { buildDataSourceOptions } from '../database/typeorm-options.js';
import { OutboundDeliveriesService } from '../outbound-webhooks/outbound-deliveries.service.js';
import { WebhookEndpointsService } from '../outbound-webhooks/webhook-endpoints.service.js';
import { CliModule } from './cli.module.js';
import { DeliveryAnnouncer } from './delivery-announcer.js';
import { OperatorError } from './exit-codes.js';

/** The admin REST API's services, over the CLI's own pool. */
export interface OperatorServices {
  keys: AdminApiKeysService;
  admins: AdminsService;
  operations: AdminOperationsService;
  endpoints: WebhookEndpointsService;
  deliveries: OutboundDeliveriesService;
  announcer: DeliveryAnnouncer;
  archive: ArchiveVerifier;
  /** The verifier key of the archive's configured signing key, if one is known here. */
  archiveKey: string | null;
  archiveOrigin: string;
}

export interface OperatorDatabase {
  services: OperatorServices;
  close(): Promise<void>;
}

/**
 * The database the gateway would use (DATABASE_URL, else the PG* variables, else the embedded cluster
 * under DATA_DIR; one a running gateway owns is shared and left running), with the schema brought up to
 * date the way the gateway does it at start. Only a command that may be the first of a new install
 * (`create: true`) may initialise a new embedded cluster; reading from one that does not exist is an
 * error, not an empty answer. No retry loop: a database that is down fails the command at once.
 */
export async function openOperatorDatabase(config: AppConfig, notice: (line: string) => void, { create }: { create: boolean }): Promise<OperatorDatabase> {
  const database = await locateDatabase(config, { create });
  // On stderr with the other diagnostics: an operator with the wrong DATA_DIR sees it at once.
  notice(`Using ${database.description}`);
  const dataSource = new DataSource(buildDataSourceOptions(database.url));
  let context: INestApplicationContext | undefined;
  const close = async () => {
    if (dataSource.isInitialized) await dataSource.destroy();
    // Closing the context waits for the announcer's NOTIFYs, then ends the pool.
    await context?.close();
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
    // Schema work done, the data source's connections go; the commands use the gateway's own data access.
    await dataSource.destroy();
    // No logger: stdout carries only the command's answer. abortOnError off: a wiring error is thrown, not process.abort().
    context = await NestFactory.createApplicationContext(CliModule.forRoot(config, database.url), { logger: false, abortOnError: false });
  } catch (error) {
    await close();
    throw error;
  }
  // The log's own origin, from its latest checkpoint, names the key unless ARCHIVE_ORIGIN says otherwise.
  const latest = await context.get(ArchiveRepository).latestCheckpoint();
  return {
    services: {
      keys: context.get(AdminApiKeysService),
      admins: context.get(AdminsService),
      operations: context.get(AdminOperationsService),
      endpoints: context.get(WebhookEndpointsService),
      deliveries: context.get(OutboundDeliveriesService),
      announcer: context.get(DeliveryAnnouncer),
      archive: context.get(ArchiveVerifier),
      archiveKey: await archiveVerifierKey(config, latest),
      archiveOrigin: archiveOrigin(config, latest),
    },
    close,
  };
}

import { Type } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { __resetOutOfContextForTests } from 'nestjs-pino/PinoLogger';
import { Writable } from 'node:stream';
import { Client } from 'pg';
import { createApp } from '../../src/app.factory';
import { loadConfig } from '../../src/config/app-config';
import { createTestDatabase, dropTestDatabase } from './database';

export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
export const TEST_WEBHOOK_SECRET = 'test-webhook-secret-0123456789abcdef';

export interface TestApp {
  app: NestFastifyApplication;
  databaseUrl: string;
  /** A connection of the test's own to the app's database, for setting up and checking rows. */
  db: Client;
  /** Every log line the app wrote, as production would have written it to stdout. */
  logs: () => string;
  close: () => Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  /** Share a database with another instance (two-instance tests); by default each app gets a fresh one. */
  databaseUrl?: string;
  extraModules?: Type[];
}

/** The production application (createApp) on a real PostgreSQL database of its own. */
export async function startTestApp({ env = {}, databaseUrl, extraModules }: TestAppOptions = {}): Promise<TestApp> {
  const ownsDatabase = !databaseUrl;
  const url = databaseUrl ?? (await createTestDatabase());
  let logs = '';
  const logDestination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs += chunk.toString();
      done();
    },
  });
  const config = loadConfig({
    // The most a production process may write, so the log tests see every line.
    LOG_LEVEL: 'debug',
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    BANK_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
    ...env,
    DATABASE_URL: url,
  });
  // nestjs-pino keeps its logger for code outside a request in a module-level variable, set by the
  // first app of the process; each test app needs its own, as each production process has.
  __resetOutOfContextForTests();
  const app = await createApp({ config, databaseUrl: url, logDestination, extraModules });
  const db = new Client({ connectionString: url });
  // Outage tests stop the server under it; that connection is then simply gone.
  db.on('error', () => undefined);
  await db.connect();
  return {
    app,
    databaseUrl: url,
    db,
    logs: () => logs,
    close: async () => {
      await db.end().catch(() => undefined);
      await app.close();
      if (ownsDatabase) await dropTestDatabase(url);
    },
  };
}

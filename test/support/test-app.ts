import { Type } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Writable } from 'node:stream';
import { Client } from 'pg';
import { createApp } from '../../src/app.factory.js';
import { loadConfig } from '../../src/config/app-config.js';
import { freePort } from '../../src/database/embedded-postgres.js';
import { createTestDatabase, dropTestDatabase } from './database.js';
import { Spawned, startGateway, TEST_ARCHIVE_SIGNING_KEY, waitFor } from './processes.js';

export const TEST_ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
export const TEST_WEBHOOK_SECRET = 'test-webhook-secret-0123456789abcdef';
export { TEST_ARCHIVE_SIGNING_KEY };

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
    ARCHIVE_SIGNING_KEY: TEST_ARCHIVE_SIGNING_KEY,
    ...env,
    DATABASE_URL: url,
  });
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

/**
 * The built gateway in a process of its own on `databaseUrl`, with the test's admin token and bank secret
 * and a free port on loopback, once it says it is ready (an early exit fails with what it wrote).
 */
export async function startReadyGateway(databaseUrl: string, env: NodeJS.ProcessEnv = {}): Promise<{ spawned: Spawned; url: string }> {
  const port = await freePort();
  const spawned = startGateway({
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    BANK_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
    ARCHIVE_SIGNING_KEY: TEST_ARCHIVE_SIGNING_KEY,
    ...env,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    async () => (await fetch(`${url}/health/ready`)).ok || (spawned.child.exitCode !== null && Promise.reject(new Error(spawned.output()))),
    'a gateway',
    90_000,
  );
  return { spawned, url };
}

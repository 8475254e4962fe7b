import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { createApp } from './app.factory.js';
import { Readiness } from './health/readiness.js';
import { AppConfig, ConfigValidationError, loadConfig } from './config/app-config.js';
import { locateDatabase } from './database/database-location.js';
import { leftoverClustersNotice } from './database/root-clusters.js';
import { startupBanner } from './startup/banner.js';
import { resolveStartupSecrets } from './startup/generated-secrets.js';
import { stopTracing } from './telemetry/tracing.js';

// One ordered stream for every logger of the process and the start-up banner.
const output = pino.destination(1);
let log = pino(output);

function configOrExit(): AppConfig {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigValidationError) {
      // Plain text on stderr: this is read by a person fixing their environment.
      process.stderr.write(`${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
}

async function bootstrap(): Promise<void> {
  const config = configOrExit();
  log = pino({ level: config.LOG_LEVEL }, output);
  const secrets = await resolveStartupSecrets(config);
  const database = await locateDatabase(config, { log: (message) => log.info(message) });
  log.info(`Database: ${database.description}`);
  // As root, every DATA_DIR deleted without its cluster leaves one behind (README, "As root"); after the
  // database is located, so this start's own cluster has recorded its DATA_DIR. A check that fails says nothing.
  if (process.getuid?.() === 0) {
    const leftovers = await leftoverClustersNotice().catch(() => null);
    if (leftovers) log.warn(leftovers);
  }
  const app = await createApp({ config, databaseUrl: database.url, logDestination: output }).catch(async (error) => {
    await database.release();
    throw error;
  });
  await app.listen({ port: config.PORT, host: config.HOST });
  const { port } = app.getHttpServer().address() as AddressInfo;
  log.info({ port, host: config.HOST, embeddedDatabase: database.embedded }, 'Tax Document Gateway listening');
  // Plain text for the person who just ran `npm start`, through the loggers' stream so that it comes
  // after everything they wrote: the last thing on screen.
  output.write(`${startupBanner(config, port, secrets)}\n`);

  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    // Not ready from now on, so that a load balancer stops sending; requests keep being served meanwhile.
    app.get(Readiness).drain();
    if (config.SHUTDOWN_DELAY_SECONDS > 0) {
      log.info({ signal, delaySeconds: config.SHUTDOWN_DELAY_SECONDS }, 'Shutting down: not ready, still serving until the delay is over');
      await new Promise((resolve) => setTimeout(resolve, config.SHUTDOWN_DELAY_SECONDS * 1000));
    }
    log.info({ signal }, 'Shutting down: finishing in-flight requests');
    // app.close() stops accepting, waits for in-flight requests, releases push delivery claims, then
    // closes the pool; the embedded cluster goes last so those requests still have their database.
    await app.close();
    await database.release();
    await stopTracing();
    log.info('Shutdown complete');
    process.exit(0);
  };
  process.on('SIGTERM', (signal) => void shutdown(signal));
  process.on('SIGINT', (signal) => void shutdown(signal));
}

bootstrap().catch((error: unknown) => {
  log.fatal({ err: { message: error instanceof Error ? error.message : String(error) } }, 'Start-up failed');
  process.exit(1);
});

import 'reflect-metadata';
import pino from 'pino';
import { createApp } from './app.factory';
import { AppConfig, ConfigValidationError, loadConfig } from './config/app-config';
import { locateDatabase } from './database/database-location';

let log = pino();

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
  log = pino({ level: config.LOG_LEVEL });
  const database = await locateDatabase(config, (message) => log.info(message));
  const app = await createApp({ config, databaseUrl: database.url }).catch(async (error) => {
    await database.release();
    throw error;
  });
  await app.listen({ port: config.PORT, host: config.HOST });
  log.info({ port: config.PORT, host: config.HOST, embeddedDatabase: database.embedded }, 'Tax Document Gateway listening');

  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'Shutting down: finishing in-flight requests');
    // app.close() stops accepting, waits for in-flight requests, then closes the pool; the embedded
    // cluster goes last so those requests still have their database.
    await app.close();
    await database.release();
    log.info('Shutdown complete');
    process.exit(0);
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

bootstrap().catch((error: unknown) => {
  log.fatal({ err: { message: error instanceof Error ? error.message : String(error) } }, 'Start-up failed');
  process.exit(1);
});

import { AppConfig } from '../config/app-config';
import { startEmbeddedPostgres } from './embedded-postgres';

export interface DatabaseLocation {
  url: string;
  embedded: boolean;
  /** Stops the embedded cluster if this process started (or adopted) it; nothing for DATABASE_URL. */
  release(): Promise<void>;
}

/** Where every entry point (gateway, CLIs, TypeORM CLI) finds its database: DATABASE_URL, else the embedded cluster. */
export async function locateDatabase(config: AppConfig, log?: (message: string) => void): Promise<DatabaseLocation> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, embedded: false, release: async () => undefined };
  const cluster = await startEmbeddedPostgres({ dataDir: config.DATA_DIR, log });
  return { url: cluster.url, embedded: true, release: () => cluster.stop() };
}

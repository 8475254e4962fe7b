import { resolve } from 'node:path';
import { AppConfig } from '../config/app-config.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';

export interface DatabaseLocation {
  url: string;
  embedded: boolean;
  /** Which database this is, for a person (never the password). */
  description: string;
  /** Stops the embedded cluster if this process started (or adopted) it; nothing for an external server. */
  release(): Promise<void>;
}

export interface LocateOptions {
  log?: (message: string) => void;
  /** False for read-only work: an embedded cluster that does not exist yet is an error, not created. */
  create?: boolean;
}

const external = (url: string, description: string): DatabaseLocation => ({ url, embedded: false, description, release: async () => undefined });

/** The URL the PG* variables describe, each part encoded so any password survives as it was given. */
function urlFromPgVariables(config: AppConfig): { url: string; where: string } | null {
  if (!config.PGHOST) return null;
  const user = config.PGUSER ?? 'postgres';
  const database = config.PGDATABASE ?? user;
  const password = config.PGPASSWORD === undefined ? '' : `:${encodeURIComponent(config.PGPASSWORD)}`;
  const where = `${config.PGHOST}:${config.PGPORT ?? 5432}/${database}`;
  const url = `postgres://${encodeURIComponent(user)}${password}@${encodeURIComponent(config.PGHOST)}:${config.PGPORT ?? 5432}/${encodeURIComponent(database)}`;
  return { url, where };
}

function describeUrl(url: string): string {
  try {
    const { hostname, port, pathname } = new URL(url);
    return `${hostname}:${port || 5432}${pathname}`;
  } catch {
    return 'the server it names';
  }
}

/**
 * Where every entry point (gateway, CLIs, TypeORM CLI) finds its database, first match wins:
 * DATABASE_URL, then the PG* variables (when PGHOST is set), then the embedded cluster of DATA_DIR.
 */
export async function locateDatabase(config: AppConfig, { log, create = true }: LocateOptions = {}): Promise<DatabaseLocation> {
  if (config.DATABASE_URL) return external(config.DATABASE_URL, `PostgreSQL at ${describeUrl(config.DATABASE_URL)} (DATABASE_URL)`);
  const fromPg = urlFromPgVariables(config);
  if (fromPg) return external(fromPg.url, `PostgreSQL at ${fromPg.where} (PGHOST and the other PG* variables)`);
  const cluster = await startEmbeddedPostgres({ dataDir: config.DATA_DIR, log, create });
  return {
    url: cluster.url,
    embedded: true,
    description: `the embedded PostgreSQL of DATA_DIR ${resolve(config.DATA_DIR)} (port ${cluster.port})`,
    release: () => cluster.stop(),
  };
}

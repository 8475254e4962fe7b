import { join } from 'node:path';
import { DataSourceOptions } from 'typeorm';

export interface DatabaseSettings {
  url: string;
  poolSize?: number;
  /**
   * Replaces each pooled connection after this long. A connection keeps the generic plan of each prepared
   * statement, made from the table sizes when it first ran it, until it closes (or an ANALYZE invalidates
   * it, which never happens where autovacuum is off). A plan made while a table was nearly empty can read
   * the whole table once it has grown (the API key look-up did, until the idempotency key led its primary
   * key); a new connection plans each statement for the tables as they are.
   */
  connectionLifetimeSeconds?: number;
  /**
   * Bounds for request traffic. Left unset for migrations and the CLI, whose statements (an index
   * build, waiting for another instance's migration lock) may rightly take longer.
   */
  timeouts?: { statementMs: number; lockMs: number };
}

/** Slack for the client-side bound, which only fires when the server cannot enforce its own (frozen). */
const CLIENT_TIMEOUT_SLACK_MS = 2000;

/**
 * The one TypeORM configuration: the application, ormconfig.ts (TypeORM CLI) and the migration
 * runner all build their DataSource from here. Schema changes only ever come from migrations.
 */
export function buildDataSourceOptions({ url, poolSize = 10, connectionLifetimeSeconds = 60, timeouts }: DatabaseSettings): DataSourceOptions {
  // DateStyle ISO whatever the server's or the database's default: a date is read as text in the answers
  // (a create's is written in Node before the database replies, as ISO), and pg parses ISO timestamps.
  const sessionSettings = ['-c idle_in_transaction_session_timeout=30000', '-c DateStyle=ISO'];
  if (timeouts) sessionSettings.push(`-c statement_timeout=${timeouts.statementMs}`, `-c lock_timeout=${timeouts.lockMs}`);
  return {
    type: 'postgres',
    url,
    entities: [join(__dirname, '..', '**', '*.entity.{ts,js}')],
    migrations: [join(__dirname, 'migrations', '*.{ts,js}')],
    migrationsTableName: 'migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    migrationsRun: false,
    logging: false,
    // gen_random_uuid() is built into PostgreSQL 13+: no extension to install (or to be allowed to).
    uuidExtension: 'pgcrypto',
    installExtensions: false,
    extra: {
      max: poolSize,
      // A statement is written as soon as it is issued, not after the previous one's answer: statements
      // a transaction issues together share one round trip (Transaction.query, Database.run).
      pipeline: true,
      maxLifetimeSeconds: connectionLifetimeSeconds,
      // Fail fast while the database is unreachable, so requests get a 503 instead of hanging.
      connectionTimeoutMillis: 3000,
      application_name: 'tax-document-gateway',
      // The lease on every claim: a transaction whose process hangs (rather than dies, which rolls
      // back at once) is ended by the server, freeing its idempotency key and locks.
      // statement_timeout and lock_timeout keep one stuck peer (a frozen instance holding a lock, a
      // runaway query) from holding every pool connection: waiters give up and answer 503.
      options: sessionSettings.join(' '),
      // A PostgreSQL that stops answering altogether cannot enforce its own statement_timeout.
      ...(timeouts ? { query_timeout: timeouts.statementMs + CLIENT_TIMEOUT_SLACK_MS } : {}),
    },
  };
}

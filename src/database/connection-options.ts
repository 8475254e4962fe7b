import { ClientConfig, CustomTypesConfig, PoolConfig, types } from 'pg';

export interface ConnectionSettings {
  url: string;
  poolSize: number;
  /**
   * Replaces each pooled connection after this long. A connection keeps the generic plan of each
   * prepared statement, made from the table sizes when it first ran it, until it closes; a new
   * connection plans each statement for the tables as they are.
   */
  lifetimeSeconds: number;
  /**
   * Bounds for request traffic: a statement PostgreSQL runs, a lock it waits for. Left unset for the
   * CLI, whose work may rightly take longer.
   */
  timeouts?: { statementMs: number; lockMs: number };
  applicationName?: string;
}

/**
 * Slack for the client-side bound on waiting for an answer, which only fires when the server cannot
 * enforce its own (a frozen server): a request then ends within the statement timeout plus this.
 */
export const CLIENT_TIMEOUT_SLACK_MS = 500;

/** Idle time after which TCP keepalive probes start on a database connection. */
export const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

/**
 * A `date` column as its text, 'YYYY-MM-DD' (DateStyle ISO, set below), which is what an entity holds
 * for it: pg would make it a Date at local midnight. Every other type as pg parses it.
 */
const DATE_OID: number = types.builtins.DATE;
const ENTITY_TYPES: CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): unknown =>
    oid === DATE_OID ? (value: string) => value : types.getTypeParser(oid, format)) as CustomTypesConfig['getTypeParser'],
};

/** pg settings common to the pool, the LISTEN connection and the readiness probe's connection. */
export function clientConfig({ url, timeouts, applicationName = 'tax-document-gateway' }: ConnectionSettings): ClientConfig {
  return {
    connectionString: url,
    application_name: applicationName,
    // Fail fast while the database is unreachable, so requests get a 503 instead of hanging: waiting for a
    // pooled connection, or for a new one, ends within the statement bound plus the slack too.
    connectionTimeoutMillis: Math.min(3000, (timeouts?.statementMs ?? Infinity) + CLIENT_TIMEOUT_SLACK_MS),
    // A transaction whose process hangs (rather than dies, which rolls back at once) is ended by the
    // server, freeing its idempotency key and locks.
    idle_in_transaction_session_timeout: 30_000,
    // A peer that vanished without closing the connection (a primary whose machine died in a failover)
    // is noticed by TCP keepalive, for idle connections and the LISTEN one too, not only by a statement
    // bound or by the next query to fail.
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
    // Dates as ISO text whatever the server's or the database's default (see ENTITY_TYPES).
    options: '-c DateStyle=ISO',
    types: ENTITY_TYPES,
    ...(timeouts
      ? { statement_timeout: timeouts.statementMs, lock_timeout: timeouts.lockMs, query_timeout: timeouts.statementMs + CLIENT_TIMEOUT_SLACK_MS }
      : {}),
  };
}

/**
 * The pool TypeORM opens (its `extra` options): statements issued together on a connection are sent
 * without waiting for each other's answers (pipeline mode), and each connection is replaced after its
 * lifetime.
 */
export function poolConfig(settings: ConnectionSettings): PoolConfig {
  return { ...clientConfig(settings), max: settings.poolSize, maxLifetimeSeconds: settings.lifetimeSeconds, pipeline: true };
}

/** A connection of its own for LISTEN: no statement bounds, it only waits. */
export function listenerConfig(url: string): ClientConfig {
  return clientConfig({ url, poolSize: 1, lifetimeSeconds: 0, applicationName: 'tax-document-gateway-listener' });
}

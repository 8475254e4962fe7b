import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { Client, ClientConfig, Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { asDatabaseUnavailable, isConnectionLost } from '../common/database-failure';
import { BoundSql, Sql } from './sql';

/** What every repository needs of a connection: one named statement at a time, with its rows. */
export interface Queryable {
  query<R extends QueryResultRow>(statement: Sql, values?: readonly unknown[]): Promise<R[]>;
}

/**
 * Checks that pg can send every value before it is handed any: pg sends a named statement's Parse before
 * it maps the values, and when one cannot be mapped (a circular object, a BigInt inside JSON) it closes the
 * statement on the server but still counts it as prepared on that connection, whose next use of it then
 * fails with 26000. Objects go as JSON, as pg would send them.
 */
function sendable(values: readonly unknown[]): unknown[] {
  const check = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(check);
    if (value !== null && typeof value === 'object' && !(value instanceof Date) && !ArrayBuffer.isView(value)) JSON.stringify(value);
  };
  values.forEach(check);
  return values as unknown[];
}

const BEGIN = 'BEGIN';
const COMMIT = 'COMMIT';
const ROLLBACK = 'ROLLBACK';

/** A transaction on one pooled connection; valid only inside the `Database.transaction` call that made it. */
export class Transaction implements Queryable {
  private ended = false;
  /** Work owed once the transaction has committed (never after a rollback). */
  readonly committed: Array<() => void> = [];

  constructor(private readonly client: PoolClient) {}

  /**
   * Statements issued without awaiting each other leave together (the pool's connections run in pg's
   * pipeline mode) and PostgreSQL runs them in order.
   */
  async query<R extends QueryResultRow>(statement: Sql, values: readonly unknown[] = []): Promise<R[]> {
    // Its connection may serve another request by now: a late statement must not land in that one's transaction.
    if (this.ended) throw new Error('This transaction has ended: use it only inside the transaction() call that made it');
    try {
      return (await this.client.query<R>({ name: statement.name, text: statement.text, values: sendable(values) })).rows;
    } catch (error) {
      throw asDatabaseUnavailable(error);
    }
  }

  /** Calls `listener` once the transaction has committed; never if it rolls back. It must not throw. */
  afterCommit(listener: () => void): void {
    this.committed.push(listener);
  }

  end(): void {
    this.ended = true;
  }
}

/** Thrown by `transaction` when PostgreSQL answered the COMMIT with a rollback (a statement of it had failed). */
export class TransactionRolledBack extends Error {
  constructor() {
    super('The transaction was rolled back at COMMIT: one of its statements failed');
    this.name = 'TransactionRolledBack';
  }
}

export interface PoolStatistics {
  /** Connections open, busy or idle. */
  total: number;
  idle: number;
  /** Callers waiting for a connection. */
  waiting: number;
  max: number;
}

/**
 * The one way to reach PostgreSQL: every repository, the delivery worker and the CLI use it. A statement
 * on the pool (`query`), a transaction of statements known in advance sent in one round trip
 * (`transactionOf`), or an interactive transaction (`transaction`). Only pg's documented API: named
 * statements, pipeline mode, BEGIN/COMMIT.
 */
@Injectable()
export class Database implements Queryable, OnApplicationShutdown {
  /** Per pooled connection: when it is retired rather than given back (see `retiring`). */
  private readonly retireAt = new WeakMap<PoolClient, number>();

  constructor(
    private readonly pool: Pool,
    private readonly settings: { lifetimeSeconds: number; max: number; listenerConfig: ClientConfig },
  ) {}

  async query<R extends QueryResultRow>(statement: Sql, values: readonly unknown[] = []): Promise<R[]> {
    // Checked before a connection is taken: a value pg cannot send never reaches a connection.
    sendable(values);
    const { client, release } = await this.checkout();
    let failure: unknown = undefined;
    try {
      return (await client.query<R>({ name: statement.name, text: statement.text, values: values as unknown[] })).rows;
    } catch (error) {
      failure = error;
      throw asDatabaseUnavailable(error);
    } finally {
      release(failure !== undefined && isConnectionLost(failure));
    }
  }

  /**
   * BEGIN, the statements and COMMIT, sent together: one round trip. A statement that fails aborts the
   * transaction, so those behind it never run and the COMMIT rolls back; that statement's error is
   * thrown. Resolves with each statement's rows once committed.
   */
  async transactionOf(statements: readonly BoundSql[]): Promise<QueryResultRow[][]> {
    for (const { values } of statements) sendable(values);
    const { client, release } = await this.checkout();
    const send = (text: string, name?: string, values?: readonly unknown[]) =>
      client.query({ text, name, values: values as unknown[] | undefined }).then(
        (result: QueryResult) => ({ ok: true as const, result }),
        (error: unknown) => ({ ok: false as const, error }),
      );
    const sent = [send(BEGIN), ...statements.map(({ statement, values }) => send(statement.text, statement.name, values)), send(COMMIT)];
    const answers = await Promise.all(sent);
    // The first failure is the cause; the statements after it only report the aborted transaction.
    const failed = answers.find((answer) => !answer.ok);
    const committed = answers.at(-1)!;
    if (failed && !failed.ok) {
      release(isConnectionLost(failed.error));
      throw asDatabaseUnavailable(failed.error);
    }
    release();
    if (committed.ok && committed.result.command !== COMMIT) throw new TransactionRolledBack();
    return answers.slice(1, -1).map((answer) => (answer.ok ? answer.result.rows : []));
  }

  /**
   * Runs `work` in a transaction: committed when it resolves, rolled back when it throws. Statements it
   * issues together leave together (pipeline mode), BEGIN with the first of them.
   */
  async transaction<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    const { client, release } = await this.checkout();
    const tx = new Transaction(client);
    const begun = client.query(BEGIN).then(
      () => null,
      (error: unknown) => error,
    );
    let unusable: unknown;
    try {
      const result = await work(tx);
      const beginError = await begun;
      if (beginError) throw asDatabaseUnavailable(beginError);
      const { command } = await client.query(COMMIT).catch((error: unknown) => Promise.reject(asDatabaseUnavailable(error)));
      if (command !== COMMIT) throw new TransactionRolledBack();
      for (const listener of tx.committed) listener();
      return result;
    } catch (error) {
      if (isConnectionLost(error)) unusable = error;
      // Sent behind every statement still in flight, so it is answered after all of them.
      else await client.query(ROLLBACK).catch((rollbackError: unknown) => (unusable = rollbackError));
      throw error;
    } finally {
      tx.end();
      // A connection that failed, or could not roll back, is closed rather than reused.
      release(unusable !== undefined);
    }
  }

  /**
   * A connection of its own, outside the pool, for LISTEN: `onNotification` for each notification of
   * `channel`, `onConnected` each time it is (re)connected, when notifications may have been missed.
   */
  listen(channel: string, onNotification: (payload: string | undefined) => void, onConnected: () => void, onFailure: (error: unknown) => void): Listener {
    return new Listener(this.settings.listenerConfig, channel, onNotification, onConnected, onFailure);
  }

  /** pg-pool's own counters, for the metrics. */
  statistics(): PoolStatistics {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount, max: this.settings.max };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }

  /**
   * A pooled client that listens for its connection's errors while checked out: pg-pool listens only
   * while a client is idle, and an 'error' event nobody listens to ends the process (the statement in
   * flight fails by itself). `release` gives the client back, or closes it if the connection failed,
   * was lost or is due to retire.
   */
  private async checkout(): Promise<{ client: PoolClient; release: (discard?: boolean) => void }> {
    const client = await this.pool.connect().catch((error: unknown) => Promise.reject(asDatabaseUnavailable(error)));
    let lost: Error | undefined;
    const onError = (error: Error) => (lost = error);
    client.on('error', onError);
    let released = false;
    return {
      client,
      // `discard`: the connection failed. A statement PostgreSQL refused leaves it usable.
      release: (discard = false) => {
        if (released) return;
        released = true;
        client.off('error', onError);
        client.release(lost ?? (discard || this.retiring(client)));
      },
    };
  }

  /**
   * pg-pool replaces a connection its lifetime after it opened, so connections opened together (a burst)
   * would all be replaced together, each new one preparing its statements again on cold caches. So each is
   * also retired when given back after a random time between half its lifetime and all of it.
   */
  private retiring(client: PoolClient): boolean {
    const now = performance.now();
    let retireAt = this.retireAt.get(client);
    if (retireAt === undefined) {
      retireAt = now + this.settings.lifetimeSeconds * 1000 * (0.5 + Math.random() / 2);
      this.retireAt.set(client, retireAt);
    }
    return now >= retireAt;
  }
}

const RECONNECT_DELAY_MS = 2000;

/** A LISTEN connection that reconnects after a failure (see `Database.listen`). */
export class Listener {
  private client: Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly config: ClientConfig,
    private readonly channel: string,
    private readonly onNotification: (payload: string | undefined) => void,
    private readonly onConnected: () => void,
    private readonly onFailure: (error: unknown) => void,
  ) {
    if (!/^[a-z_]+$/.test(channel)) throw new Error(`"${channel}" is not a channel name`);
    void this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new Client(this.config);
    const lost = (error?: unknown) => {
      if (this.client !== client) return;
      this.client = null;
      if (error) this.onFailure(error);
      client.end().catch(() => undefined);
      this.timer = setTimeout(() => void this.connect(), RECONNECT_DELAY_MS);
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', ({ channel, payload }) => channel === this.channel && this.onNotification(payload));
    this.client = client;
    try {
      await client.connect();
      // The channel name is checked above: LISTEN takes no parameters.
      await client.query(`LISTEN ${this.channel}`);
      this.onConnected();
    } catch (error) {
      lost(error);
    }
  }
}

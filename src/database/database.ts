import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/** A named SQL statement: each pooled connection parses and plans it once, then only binds values. */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

const statements = new Map<string, string>();

export function statement(name: string, text: string): Statement {
  const known = statements.get(name);
  // node-postgres refuses a name reused with other text; find out at load, not under load.
  if (known !== undefined && known !== text) throw new Error(`Two SQL statements are named "${name}"`);
  statements.set(name, text);
  return { name, text };
}

/** A transaction-scoped advisory lock: pg_advisory_xact_lock(namespace, hashtext(key)). */
export interface AdvisoryLock {
  namespace: number;
  key: string;
}

const ADVISORY_LOCK = statement('advisory-lock', 'SELECT pg_advisory_xact_lock($1::int, hashtext($2))');

/** A custom setting's name, as a trigger sets it with set_config(name, 'on', true): lower-case words, one dot. */
const COMMIT_FLAG = /^[a-z_]+\.[a-z_]+$/;

/**
 * Where a statement runs: `Database` itself (the pool: each call on any free connection) or a
 * `Transaction` that `Database.run` hands its work. Code that can do its part either way takes a `Db`
 * as its first argument; code that must be inside a transaction takes a `Transaction`.
 */
export interface Db {
  /** Runs a named statement (declared once with `statement`). */
  query<R extends QueryResultRow>(sql: Statement, values?: unknown[]): Promise<R[]>;
  /** TypeORM's entity manager on the same connection and transaction, for work off the hot paths. */
  readonly manager: EntityManager;
  /** Work owed once the transaction has committed (never after a rollback); on the pool, at once. */
  afterCommit(listener: () => void): void;
}

/** One open transaction on one pooled connection; valid only inside the `run` that made it. */
export class Transaction implements Db {
  private typeorm?: EntityManager;
  /** Advisory locks this transaction holds, so taking one again costs no round trip. */
  private readonly locks = new Set<string>();
  /** Called once it has committed. */
  readonly committed: Array<() => void> = [];
  /** Set when `run` ends: the connection is back in the pool, perhaps in another request's transaction. */
  private ended = false;
  private readonly begun: Promise<unknown>;
  private committing?: Promise<QueryResult | QueryResult[]>;
  private writing = false;

  constructor(
    readonly client: PoolClient,
    private readonly dataSource: DataSource,
    private readonly commitText: string,
  ) {
    // Not waited for: it leaves with the transaction's first statement, in one write.
    this.begun = this.send('START TRANSACTION');
    this.begun.catch(() => undefined);
  }

  async query<R extends QueryResultRow>(sql: Statement, values: unknown[] = []): Promise<R[]> {
    this.assertOpen();
    return (await this.send<R>({ name: sql.name, text: sql.text, values })).rows;
  }

  /**
   * The transaction's last statement, sent with the COMMIT in one round trip; nothing may follow it. If
   * it fails, nothing commits and `run` throws; its rows arrive before the commit is known.
   */
  queryAndCommit<R extends QueryResultRow>(sql: Statement, values: unknown[] = []): Promise<R[]> {
    const rows = this.query<R>(sql, values);
    this.sendCommit();
    return rows;
  }

  /**
   * For `run`: the COMMIT (and the flags it reads), sent unless queryAndCommit already did; resolves with
   * its result once committed. PostgreSQL answers a COMMIT after a failed statement with ROLLBACK: that throws.
   */
  async commit(): Promise<QueryResult | QueryResult[]> {
    const [, result] = await Promise.all([this.begun, this.sendCommit()]);
    const outcome = Array.isArray(result) ? result[result.length - 1] : result;
    if (outcome.command !== 'COMMIT') throw new Error('The transaction was rolled back at COMMIT: one of its statements failed');
    return result;
  }

  private sendCommit(): Promise<QueryResult | QueryResult[]> {
    if (!this.committing) {
      this.committing = this.send(this.commitText);
      // Waited for by `run` unless the work failed first: then only its rollback matters.
      this.committing.catch(() => undefined);
    }
    return this.committing;
  }

  /**
   * The connection is in pipeline mode: each statement is written at once, not after the previous
   * one's answer, and PostgreSQL runs them in order. Those issued in the same tick leave in one write.
   */
  private send<R extends QueryResultRow>(query: string | { name: string; text: string; values: unknown[] }): Promise<QueryResult<R>> {
    if (!this.writing) {
      const socket = (this.client as unknown as { connection: { stream: Socket } }).connection.stream;
      socket.cork();
      this.writing = true;
      process.nextTick(() => {
        this.writing = false;
        socket.uncork();
      });
    }
    return typeof query === 'string' ? this.client.query<R>(query) : this.client.query<R>(query);
  }

  /** Made on first use: the hot paths never need it. */
  get manager(): EntityManager {
    this.assertOpen();
    if (!this.typeorm) {
      // A query runner bound to this connection, marked as inside a transaction so that TypeORM
      // neither takes another connection nor opens a transaction of its own.
      const runner = this.dataSource.createQueryRunner();
      Object.assign(runner, { databaseConnection: this.client, isTransactionActive: true });
      this.typeorm = runner.manager;
    }
    return this.typeorm;
  }

  afterCommit(listener: () => void): void {
    this.assertOpen();
    this.committed.push(listener);
  }

  /** Takes `lock` until the transaction ends, unless it already holds it. */
  async advisoryLock(lock: AdvisoryLock): Promise<void> {
    if (this.locks.has(lockId(lock))) return;
    await this.query(ADVISORY_LOCK, [lock.namespace, lock.key]);
    this.locks.add(lockId(lock));
  }

  /** Records a lock that a statement of this transaction took by itself. */
  holds(lock: AdvisoryLock): void {
    this.locks.add(lockId(lock));
  }

  end(): void {
    this.ended = true;
  }

  private assertOpen(): void {
    if (this.ended) throw new Error('This transaction has ended: use it only inside the run that made it');
    if (this.committing) throw new Error('This transaction is committing: queryAndCommit must be its last statement');
  }
}

type Socket = { cork(): void; uncork(): void };

const lockId = (lock: AdvisoryLock) => `${lock.namespace}:${lock.key}`;

/**
 * The one way to reach the database: statements on the pool, or `run(async (tx) => …)` for a
 * transaction whose handle is passed to whatever must join it. The handle is passed, not kept in
 * AsyncLocalStorage: on Node 20 that keeps a promise hook on every promise of the process, which
 * cost 10–15 % of the gateway's CPU per request (measured on reads).
 */
@Injectable()
export class Database implements Db {
  private readonly commitFlags = new Map<string, Array<() => void>>();
  private commitText = 'COMMIT';
  /** Per pooled connection: when it is retired rather than given back (see `retiring`). */
  private readonly retireAt = new WeakMap<PoolClient, number>();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  get manager(): EntityManager {
    return this.dataSource.manager;
  }

  afterCommit(listener: () => void): void {
    listener();
  }

  /**
   * Runs `work` in a transaction on a client of the pool TypeORM holds, without TypeORM's query runner
   * in between (on the hot paths that wrapper cost more than the statements it sent); commits when it
   * resolves, rolls back when it throws.
   */
  async run<T>(work: (tx: Transaction) => Promise<T>): Promise<T> {
    const { client, release } = await this.checkout();
    const transaction = new Transaction(client, this.dataSource, this.commitText);
    let broken: Error | undefined;
    try {
      const result = await work(transaction);
      await this.commit(transaction);
      return result;
    } catch (error) {
      // A connection that cannot even roll back is not given back to the pool.
      await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      throw error;
    } finally {
      transaction.end();
      release(broken);
    }
  }

  /**
   * Calls `listener` after each commit of `run` whose transaction set the transaction-local setting
   * `name` to 'on' (a trigger's set_config(name, 'on', true)). This is how a trigger says "there is
   * new work" without pg_notify, which serialises the commits of every transaction that calls it: at
   * commit PostgreSQL queues notifications under a database-wide lock held until the commit is flushed.
   */
  onCommitFlag(name: string, listener: () => void): void {
    if (!COMMIT_FLAG.test(name)) throw new Error(`"${name}" is not a custom setting's name`);
    const listeners = this.commitFlags.get(name);
    if (listeners) return void listeners.push(listener);
    this.commitFlags.set(name, [listener]);
    // The flags are read by the COMMIT's own round trip, in one simple-protocol message.
    const reads = [...this.commitFlags.keys()].map((flag) => `current_setting('${flag}', true) = 'on' AS "${flag}"`);
    this.commitText = `SELECT ${reads.join(', ')}; COMMIT`;
  }

  /** Commits, then calls the listeners owed: afterCommit's, and those of the flags the transaction set. */
  private async commit(transaction: Transaction): Promise<void> {
    const { committed } = transaction;
    const result = await transaction.commit();
    if (Array.isArray(result)) {
      const [flags] = result as [QueryResult<Record<string, boolean>>, QueryResult];
      for (const [name, set] of Object.entries(flags.rows[0])) if (set) committed.push(...this.commitFlags.get(name)!);
    }
    // Listeners must not throw: the transaction has committed, and its caller must hear so.
    for (const listener of committed) listener();
  }

  /** Runs a named statement on any pooled connection. */
  async query<R extends QueryResultRow>(sql: Statement, values: unknown[] = []): Promise<R[]> {
    const { client, release } = await this.checkout();
    let failure: Error | undefined;
    try {
      return (await client.query<R>({ name: sql.name, text: sql.text, values })).rows;
    } catch (error) {
      // As pg's own pool.query does: a connection that failed a statement is not reused.
      failure = error as Error;
      throw error;
    } finally {
      release(failure);
    }
  }

  /**
   * A pooled client that listens for its connection's errors while checked out: pg-pool listens only
   * while a client is idle, and an 'error' event nobody listens to ends the process (the query in
   * flight fails by itself). `release` gives the client back, or discards it if it failed, was lost or
   * is due to retire.
   */
  private async checkout(): Promise<{ client: PoolClient; release: (failure?: Error) => void }> {
    const client = await this.pool.connect();
    let lost: Error | undefined;
    const onError = (error: Error) => (lost = error);
    client.on('error', onError);
    return {
      client,
      release: (failure) => {
        client.off('error', onError);
        client.release(failure ?? lost ?? this.retiring(client));
      },
    };
  }

  /**
   * pg-pool replaces a connection DB_POOL_CONNECTION_LIFETIME_SECONDS after it opened, so connections
   * opened together (at start-up, in a burst) are all replaced together, and every new one prepares its
   * statements again on cold caches: under create load that stalled every request for up to a second, once
   * a lifetime. So each connection is also retired when given back after a random time between half of
   * its lifetime and all of it, which spreads the replacements out; pg-pool's bound still holds.
   */
  private retiring(client: PoolClient): boolean {
    const now = performance.now();
    let retireAt = this.retireAt.get(client);
    if (retireAt === undefined) {
      const lifetimeSeconds = (this.dataSource.options.extra as { maxLifetimeSeconds?: number } | undefined)?.maxLifetimeSeconds;
      retireAt = lifetimeSeconds ? now + lifetimeSeconds * 1000 * (0.5 + Math.random() / 2) : Infinity;
      this.retireAt.set(client, retireAt);
    }
    return now >= retireAt;
  }

  private get pool(): Pool {
    return (this.dataSource.driver as PostgresDriver).master as Pool;
  }
}

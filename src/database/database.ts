import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { Batch, followParses } from './batch';

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

const BEGIN = statement('transaction-begin', 'BEGIN');
const COMMIT = statement('transaction-commit', 'COMMIT');

/**
 * One open transaction on one pooled connection; valid only inside the `run` that made it. Its
 * statements leave in batches, one per tick (see Batch). A transaction that is one batch, its COMMIT
 * included (queryAndCommit in the tick of its first statements), is sent without BEGIN and COMMIT:
 * PostgreSQL runs the batch as one implicit transaction and commits it at the batch's Sync.
 */
export class Transaction implements Db {
  private typeorm?: EntityManager;
  /** Advisory locks this transaction holds, so taking one again costs no round trip. */
  private readonly locks = new Set<string>();
  /** Called once it has committed. */
  readonly committed: Array<() => void> = [];
  /** Set when `run` ends: the connection is back in the pool, perhaps in another request's transaction. */
  private ended = false;
  /** Whether an explicit BEGIN has been sent (the transaction spans several batches). */
  private explicit = false;
  /** The flags read, and once committed, how it ended; null for a transaction that never sent a statement. */
  private committing?: Promise<{ flags: QueryResult; command: string } | null>;
  /** The statements issued in this tick, which leave together as one batch. */
  private pending?: Batch;
  /** Every batch sent, so `run` knows whether the connection can be used again. */
  private readonly sent: Batch[] = [];

  constructor(
    readonly client: PoolClient,
    private readonly dataSource: DataSource,
    private readonly commitFlags: Statement | null,
  ) {}

  async query<R extends QueryResultRow>(sql: Statement, values: unknown[] = []): Promise<R[]> {
    this.assertOpen();
    return (await this.enqueue(sql, values)).rows as R[];
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
   * For `run`: the commit (and the flags it reads), sent unless queryAndCommit already did; resolves with
   * the flags once committed, or null for a transaction that never sent a statement.
   */
  async commit(): Promise<QueryResult | null> {
    const outcome = await this.sendCommit();
    if (!outcome) return null;
    // PostgreSQL answers COMMIT with ROLLBACK in a transaction one of whose statements failed.
    if (outcome.command !== 'COMMIT') throw new Error('The transaction was rolled back at COMMIT: one of its statements failed');
    return outcome.flags;
  }

  private sendCommit(): Promise<{ flags: QueryResult; command: string } | null> {
    if (!this.committing) {
      if (!this.pending && this.sent.length === 0) {
        this.committing = Promise.resolve(null);
      } else {
        const flags = this.commitFlags ? this.enqueue(this.commitFlags) : Promise.resolve(EMPTY);
        // The whole transaction in this tick's batch: PostgreSQL commits it at the batch's Sync.
        const command =
          this.sent.length === 0 ? this.pending!.commitsAtSync().then(() => 'COMMIT') : this.enqueue(COMMIT).then((result) => result.command);
        this.committing = Promise.all([flags, command]).then(([flagsRead, ended]) => ({ flags: flagsRead, command: ended }));
      }
      // Waited for by `run` unless the work failed first: then only its rollback matters.
      this.committing.catch(() => undefined);
    }
    return this.committing;
  }

  /**
   * Adds a statement to this tick's batch, which leaves on the next tick (pipeline mode: at once, not
   * after the previous batch's answer; PostgreSQL runs them in order).
   */
  private enqueue(sql: Statement, values: unknown[] = []): Promise<QueryResult> {
    if (!this.pending) {
      const batch = (this.pending = new Batch(() => this.client.getTransactionStatus()));
      process.nextTick(() => this.flush(batch));
    }
    return this.pending.add(sql, values);
  }

  private flush(batch: Batch): void {
    if (this.pending !== batch) return;
    this.pending = undefined;
    // The first batch opens a transaction block unless it is the whole transaction (its commit in it).
    if (this.sent.length === 0 && !this.committing) {
      this.explicit = true;
      // Its failure fails every statement behind it.
      batch.addFirst(BEGIN).catch(() => undefined);
    }
    this.sent.push(batch);
    const client = this.client as unknown as PgClientInternals;
    // pg bounds the wait for each query's answer (query_timeout, each statement's bound and a slack): a batch
    // is several statements, each bounded by PostgreSQL's statement_timeout.
    const perStatement = client.connectionParameters.query_timeout;
    if (perStatement) batch.query_timeout = perStatement * batch.size;
    followParses(client);
    // A Query subclass, which pg queues like its own (see Batch).
    client.query(batch);
  }

  /** Resolves once PostgreSQL has answered every batch sent (or the connection failed). */
  settled(): Promise<unknown> {
    return Promise.all(this.sent.map((batch) => batch.answered));
  }

  /** Made on first use: the hot paths never need it. Its queries go after every statement already issued. */
  get manager(): EntityManager {
    this.assertOpen();
    if (this.pending) this.flush(this.pending);
    if (!this.typeorm) {
      // A query runner bound to this connection, marked as inside a transaction so that TypeORM
      // neither takes another connection nor opens a transaction of its own.
      const runner = this.dataSource.createQueryRunner();
      Object.assign(runner, { databaseConnection: this.client, isTransactionActive: true });
      this.typeorm = runner.manager;
      // TypeORM's statements are its own, each with its Sync: the transaction block must be open.
      if (!this.explicit) {
        this.enqueue(NOOP).catch(() => undefined);
        this.flush(this.pending!);
      }
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

  /**
   * For `run`, as the transaction ends: statements issued but not sent never leave (they reject). Says
   * whether a transaction block is open, to be rolled back.
   */
  end(): { open: boolean } {
    this.ended = true;
    const unsent = this.pending;
    this.pending = undefined;
    unsent?.handleError(new Error('The transaction ended before this statement was sent'));
    // A batch that is the whole transaction ends it at its Sync, committed or rolled back.
    return { open: this.explicit };
  }

  private assertOpen(): void {
    if (this.ended) throw new Error('This transaction has ended: use it only inside the run that made it');
    if (this.committing) throw new Error('This transaction is committing: queryAndCommit must be its last statement');
  }
}

/** What a Transaction uses of pg's client beyond its declared API. */
type PgClientInternals = Parameters<typeof followParses>[0] & { connectionParameters: { query_timeout?: number }; query(batch: Batch): unknown };

const NOOP = statement('transaction-noop', 'SELECT 1');
const EMPTY = { command: 'SELECT', rowCount: 0, oid: 0, fields: [], rows: [] } as QueryResult;

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
  /** The statement that reads the flags, sent with every COMMIT; null while none is registered. */
  private commitFlagsRead: Statement | null = null;
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
    const transaction = new Transaction(client, this.dataSource, this.commitFlagsRead);
    let broken: Error | undefined;
    try {
      const result = await work(transaction);
      await this.commit(transaction);
      return result;
    } catch (error) {
      const { open } = transaction.end();
      // A connection that cannot even roll back is not given back to the pool.
      if (open) await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      throw error;
    } finally {
      transaction.end();
      // The connection goes back once every batch is answered, and only if no transaction is left open on it.
      await transaction.settled();
      if (client.getTransactionStatus() !== 'I') broken ??= new Error('The connection is still inside a transaction');
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
    // The flags are read by a statement of the COMMIT's batch, just before it.
    const names = [...this.commitFlags.keys()];
    const reads = names.map((flag) => `current_setting('${flag}', true) = 'on' AS "${flag}"`);
    this.commitFlagsRead = statement(`transaction-commit-flags:${names.join(',')}`, `SELECT ${reads.join(', ')}`);
  }

  /** Commits, then calls the listeners owed: afterCommit's, and those of the flags the transaction set. */
  private async commit(transaction: Transaction): Promise<void> {
    const { committed } = transaction;
    const flags = await transaction.commit();
    for (const [name, set] of Object.entries(flags?.rows[0] ?? {})) if (set) committed.push(...this.commitFlags.get(name)!);
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

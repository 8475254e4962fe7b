import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';

/** A named SQL statement: each pooled connection parses and plans it once, then only binds values. */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

const statements = new Map<string, string>();

/** A transaction-scoped advisory lock: pg_advisory_xact_lock(namespace, hashtext(key)). */
export interface AdvisoryLock {
  namespace: number;
  key: string;
}

interface Transaction {
  client: PoolClient;
  /** TypeORM's view of the same connection and transaction, made on first use (the hot paths never need it). */
  manager?: EntityManager;
  /** Advisory locks this transaction holds, so taking one again costs no round trip. */
  locks: Set<string>;
  /** Called once it has committed (see afterCommit). */
  committed: Array<() => void>;
}

const lockId = (lock: AdvisoryLock) => `${lock.namespace}:${lock.key}`;

export function statement(name: string, text: string): Statement {
  const known = statements.get(name);
  // node-postgres refuses a name reused with other text; find out at load, not under load.
  if (known !== undefined && known !== text) throw new Error(`Two SQL statements are named "${name}"`);
  statements.set(name, text);
  return { name, text };
}

const ADVISORY_LOCK = statement('advisory-lock', 'SELECT pg_advisory_xact_lock($1::int, hashtext($2))');

/** A custom setting's name, as a trigger sets it with set_config(name, 'on', true): lower-case words, one dot. */
const COMMIT_FLAG = /^[a-z_]+\.[a-z_]+$/;

/**
 * The one way to reach the database. `run` opens a transaction held in AsyncLocalStorage; every
 * `query` (named statements, for the hot paths) and every `manager` call (TypeORM, for the rest)
 * made inside it, however deep, joins that transaction, without a manager passed through signatures.
 * Outside `run` they use the pool directly.
 */
@Injectable()
export class TransactionContext {
  private readonly storage = new AsyncLocalStorage<Transaction>();
  private readonly commitFlags = new Map<string, Array<() => void>>();
  private commitText = 'COMMIT';

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The current transaction's manager, or the plain one outside a transaction. */
  get manager(): EntityManager {
    const transaction = this.storage.getStore();
    if (!transaction) return this.dataSource.manager;
    if (!transaction.manager) {
      // A query runner bound to the transaction's connection, marked as inside a transaction so that
      // TypeORM neither takes another connection nor opens a transaction of its own.
      const runner = this.dataSource.createQueryRunner();
      Object.assign(runner, { databaseConnection: transaction.client, isTransactionActive: true });
      transaction.manager = runner.manager;
    }
    return transaction.manager;
  }

  /**
   * Runs `work` in a transaction that every `query` and `manager` call inside it joins; nested calls
   * reuse it. The transaction runs on a client of the pool TypeORM holds, without TypeORM's query
   * runner in between: on the hot paths that wrapper cost more than the statements it sent.
   */
  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.storage.getStore()) return work();
    const { client, release } = await this.checkout();
    const transaction: Transaction = { client, locks: new Set(), committed: [] };
    let broken: Error | undefined;
    try {
      await client.query('START TRANSACTION');
      const result = await this.storage.run(transaction, work);
      await this.commit(transaction);
      return result;
    } catch (error) {
      // A connection that cannot even roll back is not given back to the pool.
      await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
      throw error;
    } finally {
      release(broken);
    }
  }

  /** Calls `listener` once the current transaction has committed (never if it rolls back), or now outside one. */
  afterCommit(listener: () => void): void {
    const transaction = this.storage.getStore();
    if (transaction) transaction.committed.push(listener);
    else listener();
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
  private async commit({ client, committed }: Transaction): Promise<void> {
    if (this.commitFlags.size === 0) await client.query('COMMIT');
    else {
      const [flags] = (await client.query(this.commitText)) as unknown as [QueryResult<Record<string, boolean>>, QueryResult];
      for (const [name, set] of Object.entries(flags.rows[0])) if (set) committed.push(...this.commitFlags.get(name)!);
    }
    // Listeners must not throw: the transaction has committed, and its caller must hear so.
    for (const listener of committed) listener();
  }

  /** Runs a named statement in the current transaction, or on any pooled connection outside one. */
  async query<R extends QueryResultRow>(sql: Statement, values: unknown[] = []): Promise<R[]> {
    const transaction = this.storage.getStore();
    if (transaction) return (await transaction.client.query<R>({ name: sql.name, text: sql.text, values })).rows;
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
   * flight fails by itself). `release` gives the client back, or discards it if it failed or was lost.
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
        client.release(failure ?? lost);
      },
    };
  }

  private get pool(): Pool {
    return (this.dataSource.driver as PostgresDriver).master as Pool;
  }

  /** Takes `lock` until the current transaction ends, unless it already holds it. */
  async advisoryLock(lock: AdvisoryLock): Promise<void> {
    const held = this.storage.getStore()?.locks;
    if (held?.has(lockId(lock))) return;
    await this.query(ADVISORY_LOCK, [lock.namespace, lock.key]);
    held?.add(lockId(lock));
  }

  /** Records a lock that a statement of the current transaction took by itself. */
  holds(lock: AdvisoryLock): void {
    this.storage.getStore()?.locks.add(lockId(lock));
  }
}

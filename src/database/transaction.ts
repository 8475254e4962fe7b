import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { PoolClient, QueryResultRow } from 'pg';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { asDatabaseUnavailable, DatabaseUnavailable } from '../common/database-failure.js';
import { takeAfterCommit } from './after-commit.js';
import { Bound, connectionOf, firstFailureOf, PreparedStatement, RowsOf, sendable } from './prepared-statement.js';
import { sentTogether } from './sent-together.js';

/**
 * An advisory lock a transaction takes before it reads, as a SQL expression of its values ($1, $2, …):
 * `pg_advisory_xact_lock(7340217, hashtext($1))`, or a `pg_try_…` one, whose answer says whether it was
 * granted. The locks of one read are taken by one statement, in the order given.
 */
export class Lock {
  constructor(
    readonly name: string,
    readonly expression: string,
  ) {}

  with(...values: unknown[]): BoundLock {
    return { lock: this, values };
  }
}

export interface BoundLock {
  readonly lock: Lock;
  readonly values: readonly unknown[];
}

/** What a read sends: the locks first (one statement), then each read, each with a snapshot of its own, taken behind the locks. */
export interface ReadStep<Reads extends readonly Bound[]> {
  readonly locks?: readonly BoundLock[];
  readonly reads: Reads;
  /** A read takes row locks (FOR UPDATE), which it may wait for. */
  readonly waitsForRows?: boolean;
}

/**
 * What the first read of a transaction sends before the work's own (the idempotency key's claim), and
 * the check of its answers, which may end the work by throwing.
 */
export interface Opening {
  readonly locks: readonly BoundLock[];
  readonly reads: readonly Bound[];
  /** The answers of the locks (one row: each lock's answer in order) and of the reads. */
  check(locks: readonly unknown[], reads: readonly QueryResultRow[][]): void;
}

/** PostgreSQL's unique_violation: another transaction committed the row this one meant to insert. */
export const isUniqueViolation = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === '23505';

const BEGIN = { text: 'BEGIN' };
const COMMIT = { text: 'COMMIT' };
const ROLLBACK = { text: 'ROLLBACK' };

/** `$n` of a statement's own numbering, moved by `offset` for a statement made of several. */
const renumbered = (text: string, offset: number) => (offset === 0 ? text : text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`));

/** Composed statements, by name: each is declared (and so prepared per connection) once. */
const composed = new Map<string, PreparedStatement>();

/**
 * `parts` names the statements composed, which names the statement too; PostgreSQL keeps 63 bytes of a
 * name, so a longer one is shortened, with a digest of it to keep it apart from others.
 */
function compose(parts: string, make: () => string): PreparedStatement {
  let statement = composed.get(parts);
  if (!statement) {
    const name = Buffer.byteLength(parts) <= 63 ? parts : `${parts.slice(0, 46)}~${createHash('sha256').update(parts).digest('base64url').slice(0, 16)}`;
    statement = new PreparedStatement(name, make());
    composed.set(parts, statement);
  }
  return statement;
}

/**
 * The locks as one statement: `SELECT <lock 0> AS "0", <lock 1> AS "1", …`. With `gatedBy`, the locks
 * of an opening come first, and each of `locks` is taken only if every one of those was granted: a
 * request whose claim failed waits for nothing.
 */
function locksStatement(locks: readonly BoundLock[], gatedBy: readonly BoundLock[] = []): Bound {
  let offset = 0;
  const expression = ({ lock, values }: BoundLock) => {
    const text = renumbered(lock.expression, offset);
    offset += values.length;
    return text;
  };
  const values = [...gatedBy, ...locks].flatMap(({ values }) => values);
  if (gatedBy.length === 0 || locks.length === 0) {
    const all = [...gatedBy, ...locks];
    return compose(
      `locks:${all.map(({ lock }) => lock.name).join('+')}`,
      () => `SELECT ${all.map((lock, index) => `${expression(lock)} AS "${index}"`).join(', ')}`,
    ).with(...values);
  }
  const name = `locks:${gatedBy.map(({ lock }) => lock.name).join('+')}>${locks.map(({ lock }) => lock.name).join('+')}`;
  return compose(name, () => {
    const gates = gatedBy.map((lock, index) => `${expression(lock)} AS "${index}"`);
    const granted = gatedBy.map((_, index) => `g."${index}"`).join(' AND ');
    const gated = locks.map((lock, index) => `CASE WHEN ${granted} THEN ${expression(lock)} END AS "${gatedBy.length + index}"`);
    return `SELECT ${[...gatedBy.map((_, index) => `g."${index}"`), ...gated].join(', ')} FROM (SELECT ${gates.join(', ')}) g`;
  }).with(...values);
}

/**
 * The writes as one statement: each an INSERT, UPDATE or DELETE of its own (without WITH), made the
 * data-modifying CTEs of one statement. They see one snapshot and none sees another's rows, so a write
 * may not depend on another of the same commit; constraints and triggers run once all are done.
 */
function writesStatement(writes: readonly Bound[]): Bound {
  if (writes.length === 1) return writes[0];
  let offset = 0;
  const statement = compose(`writes:${writes.map(({ statement }) => statement.name).join('+')}`, () => {
    const parts = writes.map(({ statement: write, values }, index) => {
      const part = `w${index} AS (${renumbered(write.text, offset)})`;
      offset += values.length;
      return part;
    });
    return `WITH ${parts.join(', ')} SELECT 1`;
  });
  return statement.with(...writes.flatMap(({ values }) => values));
}

type State = 'new' | 'open' | 'managed' | 'ended';

/**
 * One transaction in the shape every write of the gateway takes (docs/architecture.md, "One shape for
 * every write"): read what the decision needs, behind the locks it needs (`read`, whose first call sends
 * BEGIN with it: one round trip); decide in TypeScript; queue the writes (`write`), which `commit` sends
 * with COMMIT: one round trip. Nothing is committed unless every write succeeded, and what waits for the
 * commit (`afterCommit`) runs only once PostgreSQL has answered COMMIT with a commit.
 *
 * Work that must read or write through TypeORM's EntityManager (`manager`) gets a transaction TypeORM
 * knows of: its BEGIN is TypeORM's own, and its writes are still sent with the COMMIT.
 */
export class Transaction {
  private state: State = 'new';
  private runner: QueryRunner | null = null;
  private client: PoolClient | null = null;
  private writes: Bound[] = [];
  private readonly listeners: Array<() => void> = [];
  /** Whether the opening is still to be read: it goes with the first read, whatever began the transaction. */
  private openingDue: boolean;

  constructor(
    private readonly dataSource: DataSource,
    private readonly opening?: Opening,
    /** 2 when the work runs again because its first transaction met a unique violation at commit. */
    readonly attempt = 1,
  ) {
    this.openingDue = opening !== undefined;
  }

  /**
   * Runs the locks, then the reads, in this transaction; the first read sends BEGIN with them (one round
   * trip), and the opening: its locks first, the step's taken only if the opening's were granted, then its
   * reads and the step's. Its check decides before the work sees anything. A step whose reads wait for row
   * locks (`waitsForRows`, a read FOR UPDATE) is sent only once the check has passed, in a round trip of
   * its own: a request refused by the opening waits for no row. A failure aborts the transaction: nothing
   * of it will commit.
   */
  async read<const Reads extends readonly Bound[]>(step: ReadStep<Reads>): Promise<RowsOf<Reads>> {
    const client = await this.connect();
    const begin = this.state === 'new';
    const opening = this.openingDue ? this.opening : undefined;
    this.openingDue = false;
    if (!opening) return (await this.send(client, begin, step.locks ?? [], [], step.reads)).slice(1) as RowsOf<Reads>;
    const together = !step.waitsForRows;
    const [lockAnswers, ...rows] = await this.send(client, begin, together ? (step.locks ?? []) : [], opening.locks, [
      ...opening.reads,
      ...(together ? step.reads : []),
    ]);
    opening.check(lockAnswers.slice(0, opening.locks.length), rows.slice(0, opening.reads.length));
    if (together) return rows.slice(opening.reads.length) as RowsOf<Reads>;
    return (await this.send(client, false, step.locks ?? [], [], step.reads)).slice(1) as RowsOf<Reads>;
  }

  /**
   * Sends (BEGIN,) the locks as one statement (`gates` first, see locksStatement) and the reads, together;
   * answers the locks' answers, then each read's rows.
   */
  private async send(
    client: PoolClient,
    begin: boolean,
    locks: readonly BoundLock[],
    gates: readonly BoundLock[],
    reads: readonly Bound[],
  ): Promise<[unknown[], ...QueryResultRow[][]]> {
    if (begin) this.state = 'open';
    const anyLock = locks.length + gates.length > 0;
    const sent = [...(anyLock ? [locksStatement(locks, gates)] : []), ...reads];
    const issued = sentTogether(client, () => [...(begin ? [client.query(BEGIN).then(() => [])] : []), ...sent.map((bound) => this.run(client, bound))]);
    const answers = await Promise.allSettled(issued);
    let rows: QueryResultRow[][];
    try {
      rows = firstFailureOf(answers).slice(begin ? 1 : 0);
    } catch (error) {
      throw asDatabaseUnavailable(error);
    }
    const lockAnswers = anyLock ? Object.values(rows.shift()![0]) : [];
    return [lockAnswers, ...rows];
  }

  /**
   * An EntityManager in this transaction, for work that reads or writes through TypeORM: the transaction
   * is begun by TypeORM (its startTransaction), then the opening is read in it.
   */
  async manager(): Promise<EntityManager> {
    if (this.state === 'new') {
      const runner = this.queryRunner();
      try {
        await runner.startTransaction();
      } catch (error) {
        throw asDatabaseUnavailable(error);
      }
      this.state = 'managed';
      if (this.openingDue) await this.read({ reads: [] });
    }
    if (this.state !== 'managed') throw new Error('This transaction was begun by a read; it has no EntityManager');
    return this.runner!.manager;
  }

  /** Queues writes, sent with COMMIT. */
  write(...statements: Bound[]): void {
    if (this.state === 'ended') throw new Error('This transaction has ended');
    this.writes.push(...statements);
  }

  /** Drops the writes queued so far: the work refused, and what it decided before is void. */
  discardWrites(): void {
    this.writes = [];
  }

  /** Runs `listener` once this transaction has committed; never if it does not. A listener must not throw. */
  afterCommit(listener: () => void): void {
    this.listeners.push(listener);
  }

  /**
   * Sends the queued writes, then `last`, as one statement, and COMMIT with it: one round trip (with
   * BEGIN too when nothing was read; a transaction with an opening reads it first). If a write fails,
   * PostgreSQL has rolled back by the time COMMIT arrives: nothing is committed, and that failure is
   * thrown. The connection is given back either way.
   */
  async commit(last: readonly Bound[] = []): Promise<void> {
    if (this.state === 'ended') throw new Error('This transaction has ended');
    if (this.openingDue) await this.read({ reads: [] });
    if (this.state === 'new' && this.writes.length + last.length === 0) {
      await this.end(false);
      return this.listeners.forEach((listener) => listener());
    }
    let answered = false;
    try {
      const client = await this.connect();
      const writes = [...this.writes, ...last];
      const managed = this.state === 'managed';
      // What code in a managed transaction put on it with afterCommit(manager, …) waits for the same proof.
      if (managed) this.listeners.push(...takeAfterCommit(this.runner!));
      const [sent, committed] = sentTogether(client, () => {
        const begin = this.state === 'new' ? [client.query(BEGIN).then(() => [])] : [];
        const written = writes.length > 0 ? [this.run(client, writesStatement(writes))] : [];
        // TypeORM reports a COMMIT as committed even when PostgreSQL answered it with a rollback (a write
        // failed before it): the writes' answers say which, and are awaited before anything is claimed.
        const commit = (managed ? this.runner!.commitTransaction() : client.query(COMMIT)).then(
          (result: unknown) => ((answered = true), result),
          (error: unknown) => ({ failed: error }),
        );
        return [[...begin, ...written], commit] as const;
      });
      const answers = await Promise.allSettled(sent);
      const outcome = (await committed) as { command?: string; failed?: unknown } | undefined;
      this.state = 'ended';
      firstFailureOf(answers);
      if (outcome?.failed) throw outcome.failed as Error;
      if (!managed && outcome?.command !== 'COMMIT') throw new Error('The transaction was rolled back at COMMIT');
    } catch (error) {
      // Answered, the COMMIT left the connection outside any transaction (a rollback when a write failed); unanswered, it cannot say where it stands.
      await this.end(!answered);
      throw asDatabaseUnavailable(error);
    }
    await this.end(false);
    this.listeners.forEach((listener) => listener());
  }

  /** Ends the transaction without committing anything; the connection is given back. */
  async rollback(): Promise<void> {
    if (this.state === 'ended' || this.state === 'new') return this.end(false);
    const managed = this.state === 'managed';
    this.state = 'ended';
    try {
      if (managed) await this.runner!.rollbackTransaction();
      else await this.client!.query(ROLLBACK);
      await this.end(false);
    } catch {
      // The connection cannot say where it stands: it is closed rather than given back in a transaction.
      await this.end(true);
    }
  }

  private run(client: PoolClient, { statement, values }: Bound): Promise<QueryResultRow[]> {
    return statement.send(client, sendable(values));
  }

  private queryRunner(): QueryRunner {
    this.runner ??= this.dataSource.createQueryRunner();
    return this.runner;
  }

  private async connect(): Promise<PoolClient> {
    if (this.state === 'ended') throw new Error('This transaction has ended');
    const runner = this.queryRunner();
    // Its connection was given back, or lost (TypeORM then gives it back at once): a statement sent now
    // could land in another request's transaction. Nothing is sent, and what the transaction wrote is gone.
    if (runner.isReleased) throw new DatabaseUnavailable('session_ended', new Error('This transaction has ended: its connection was given back or lost'));
    this.client ??= await connectionOf(runner);
    return this.client;
  }

  private async end(broken: boolean): Promise<void> {
    this.state = 'ended';
    const runner = this.runner;
    if (!runner || runner.isReleased) return;
    if (broken && this.client) void this.client.end().catch(() => undefined);
    // What TypeORM's subscribers put on a managed transaction is this transaction's to run or drop.
    takeAfterCommit(runner);
    await runner.release();
  }
}

/** `bound`'s rows: read in `tx` (on its connection) when given, else run alone on a pooled connection. */
export async function rowsOf<Row extends QueryResultRow>(bound: Bound<Row>, manager: EntityManager, tx?: Transaction): Promise<Row[]> {
  return tx ? (await tx.read({ reads: [bound] }))[0] : bound.statement.run(manager, bound.values);
}

/** Opens transactions: the one place in the gateway that does (docs/architecture.md, "One shape for every write"). */
@Injectable()
export class Transactions {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** A transaction not begun yet; its first read sends `opening` with it. `attempt` 2 runs work again after a unique violation. */
  begin(opening?: Opening, attempt = 1): Transaction {
    return new Transaction(this.dataSource, opening, attempt);
  }

  /**
   * Runs `work` in a transaction and commits what it queued; rolls back when it throws. With
   * `retryOnConflict`, when a write meets a row another transaction committed meanwhile (a unique
   * violation), `work` runs again, once, in a new transaction: its reads then see that row and decide anew.
   */
  async run<T>(work: (tx: Transaction) => Promise<T>, { retryOnConflict = false }: { retryOnConflict?: boolean } = {}): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const tx = this.begin(undefined, attempt);
      try {
        const result = await work(tx);
        await tx.commit();
        return result;
      } catch (error) {
        await tx.rollback();
        if (retryOnConflict && attempt === 1 && isUniqueViolation(error)) continue;
        throw error;
      }
    }
  }

  /**
   * Runs `work` with an EntityManager in a transaction TypeORM knows of, for work that reads and writes
   * through TypeORM's repositories (administration, the CLI); commits when it returns, rolls back when it
   * throws. What it put on the transaction with afterCommit(manager, …) runs once the commit is certain.
   */
  managed<T>(work: (manager: EntityManager, tx: Transaction) => Promise<T>): Promise<T> {
    return this.run(async (tx) => work(await tx.manager(), tx));
  }
}

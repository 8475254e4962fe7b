import type { PoolClient, QueryResultRow } from 'pg';
import { EntityManager, QueryRunner } from 'typeorm';
import { asDatabaseUnavailable, DatabaseUnavailable } from '../common/database-failure.js';
import { takeAfterCommit } from './after-commit.js';

/**
 * The values as pg will send them, with objects already JSON, as pg would make them: pg sends a named
 * statement's Parse before it maps the values, and when one cannot be mapped (a circular object, a BigInt
 * inside JSON) it closes the statement on the server but still counts it as prepared on that connection,
 * whose next use of it then fails with 26000. Made here, before anything is sent, such a value fails
 * alone. An object value becomes its JSON once; objects inside an array are only checked here, and pg
 * makes the array.
 */
function sendable(values: readonly unknown[]): unknown[] {
  const check = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(check);
    if (isJson(value)) JSON.stringify(value);
  };
  return values.map((value) => {
    if (isJson(value)) return JSON.stringify(value);
    check(value);
    return value;
  });
}

const isJson = (value: unknown): value is object =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date) && !ArrayBuffer.isView(value);

const declared = new Map<string, string>();

/** A statement with its values, for `runTogether`, `runAndCommit` and `transactionOf`. */
export interface Bound<Row extends QueryResultRow = QueryResultRow> {
  readonly statement: PreparedStatement<Row>;
  readonly values: readonly unknown[];
}

/** The rows of each of `Statements`, in their order and with their types. */
export type RowsOf<Statements extends readonly Bound[]> = { -readonly [K in keyof Statements]: Statements[K] extends Bound<infer Row> ? Row[] : never };

/**
 * A statement PostgreSQL parses and plans once per connection and then runs with new values only (a
 * named, prepared statement): for the hot paths, where parsing and planning a statement each time would
 * cost the database more than the statement's own work. Sent on the connection TypeORM's QueryRunner
 * hands out (`QueryRunner.connect()`), the connection of the caller's transaction when it has one.
 * Declared once, at module load or when its repository is built, where two statements with one name and
 * different text fail at once rather than under load (pg refuses a name prepared on a connection with
 * other text).
 */
export class PreparedStatement<Row extends QueryResultRow = QueryResultRow> {
  constructor(
    readonly name: string,
    readonly text: string,
  ) {
    const previous = declared.get(name);
    if (previous !== undefined && previous !== text) throw new Error(`Two prepared statements are named "${name}"`);
    declared.set(name, text);
  }

  /** A statement declared before, by its name (for tests that examine a repository's plans). */
  static named(name: string): PreparedStatement {
    const text = declared.get(name);
    if (text === undefined) throw new Error(`No prepared statement is named "${name}"`);
    return new PreparedStatement(name, text);
  }

  /** The statement with these values, for `runTogether`. */
  with(...values: unknown[]): Bound<Row> {
    return { statement: this, values };
  }

  /** Its rows, run in `manager`'s transaction, or (the data source's own manager) alone on a pooled connection. */
  async run(manager: EntityManager, values: readonly unknown[] = []): Promise<Row[]> {
    const [rows] = await runTogether(manager, [this.with(...values)]);
    return rows;
  }

  send(client: PoolClient, values: readonly unknown[]): Promise<Row[]> {
    return client.query<Row>({ name: this.name, text: this.text, values: values as unknown[] }).then(
      (result) => result.rows,
      (error: unknown) => {
        // 26000: a statement pg counts as prepared on this connection is not (a DEALLOCATE, a pooler in
        // between); its bookkeeping can no longer be trusted, so the connection is closed, and the pool,
        // given it back, drops it.
        if ((error as { code?: unknown }).code === '26000') void client.end().catch(() => undefined);
        throw error;
      },
    );
  }
}

/**
 * Statements sent together on one connection, in order, without waiting for each other's answer (the
 * pool's connections are in pg's pipeline mode): one round trip, each statement still run alone and with
 * a snapshot of its own. In `manager`'s transaction when it has one, else on one pooled connection taken
 * for them (each then commits by itself). The first failure is thrown; a failure that means the database
 * could not serve the request as a DatabaseUnavailable.
 */
export async function runTogether<const Statements extends readonly Bound[]>(manager: EntityManager, statements: Statements): Promise<RowsOf<Statements>> {
  const sent = statements.map(({ statement, values }) => ({ statement, values: sendable(values) }));
  const transaction = manager.queryRunner;
  // Its connection was given back, or lost (TypeORM then gives it back at once): a statement sent now could
  // land in another request's transaction. Nothing is sent, and what the transaction wrote is gone.
  if (transaction?.isReleased) throw new DatabaseUnavailable('session_ended', new Error('This transaction has ended: its connection was given back or lost'));
  const runner = transaction ?? manager.dataSource.createQueryRunner();
  try {
    const client = await connectionOf(runner);
    // Every answer is awaited before the connection can go back: none may arrive on its next user's watch.
    return firstFailureOf(await Promise.allSettled(sent.map(({ statement, values }) => statement.send(client, values)))) as RowsOf<Statements>;
  } catch (error) {
    throw asDatabaseUnavailable(error);
  } finally {
    if (!transaction) await runner.release();
  }
}

/**
 * The last statements of `transaction` (a QueryRunner's, begun with startTransaction) and its COMMIT, sent
 * together: one round trip. COMMIT follows them on the connection without waiting for their answers; if
 * one fails, PostgreSQL has ended the transaction by the time COMMIT arrives (it answers ROLLBACK, which
 * TypeORM reports as a commit): nothing is committed, and that failure is thrown. What afterCommit put on
 * the transaction is therefore run here, once every answer says it committed, and dropped otherwise.
 */
export async function runAndCommit<const Statements extends readonly Bound[]>(transaction: QueryRunner, statements: Statements): Promise<RowsOf<Statements>> {
  const sent = statements.map(({ statement, values }) => ({ statement, values: sendable(values) }));
  const client = await connectionOf(transaction);
  const owed = takeAfterCommit(transaction);
  const answers = Promise.allSettled(sent.map(({ statement, values }) => statement.send(client, values)));
  const committed = transaction.commitTransaction().then(
    () => null,
    (error: unknown) => error,
  );
  const rows = await answers;
  const commitFailure = await committed;
  let result: RowsOf<Statements>;
  try {
    result = firstFailureOf(rows) as RowsOf<Statements>;
    if (commitFailure) throw commitFailure;
  } catch (error) {
    throw asDatabaseUnavailable(error);
  }
  owed.forEach((listener) => listener());
  return result;
}

/**
 * A whole transaction of statements known in advance, on a pooled connection: BEGIN, the statements and
 * COMMIT, sent together (one round trip). Such a transaction needs no state in TypeORM (nothing runs
 * between its statements), and its startTransaction() would wait for BEGIN's answer before anything else
 * is sent. A statement that fails aborts the transaction, so those behind it do not run and PostgreSQL
 * answers the COMMIT with a rollback; the first failure is thrown. Once the COMMIT's answer has arrived
 * the connection is outside any transaction, whatever happened; a connection lost meanwhile is closed.
 */
export async function transactionOf<const Statements extends readonly Bound[]>(manager: EntityManager, statements: Statements): Promise<RowsOf<Statements>> {
  const sent = statements.map(({ statement, values }) => ({ statement, values: sendable(values) }));
  const runner = manager.dataSource.createQueryRunner();
  try {
    const client = await connectionOf(runner);
    const begun = client.query(BEGIN).then(() => []);
    const rows = sent.map(({ statement, values }) => statement.send(client, values));
    const committed = client.query(COMMIT);
    const answers = await Promise.allSettled([begun, ...rows, committed.then(() => [])]);
    const result = firstFailureOf(answers).slice(1, -1) as RowsOf<Statements>;
    // Without a failure reported, PostgreSQL cannot have rolled back; checked all the same, as nothing may be claimed committed that is not.
    if ((await committed).command !== 'COMMIT') throw new Error('The transaction was rolled back at COMMIT');
    return result;
  } catch (error) {
    throw asDatabaseUnavailable(error);
  } finally {
    await runner.release();
  }
}

const BEGIN = { text: 'BEGIN' };
const COMMIT = { text: 'COMMIT' };

async function connectionOf(runner: QueryRunner): Promise<PoolClient> {
  try {
    return (await runner.connect()) as PoolClient;
  } catch (error) {
    throw asDatabaseUnavailable(error);
  }
}

function firstFailureOf(answers: PromiseSettledResult<QueryResultRow[]>[]): QueryResultRow[][] {
  const failed = answers.find((answer) => answer.status === 'rejected');
  if (failed) throw failed.reason;
  return answers.map((answer) => (answer as PromiseFulfilledResult<QueryResultRow[]>).value);
}

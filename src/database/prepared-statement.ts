import type { PoolClient, QueryResultRow } from 'pg';
import { EntityManager, QueryRunner } from 'typeorm';
import { asDatabaseUnavailable } from '../common/database-failure.js';

/**
 * The values as pg will send them, with objects already JSON, as pg would make them: pg sends a named
 * statement's Parse before it maps the values, and when one cannot be mapped (a circular object, a BigInt
 * inside JSON) it closes the statement on the server but still counts it as prepared on that connection,
 * whose next use of it then fails with 26000. Made here, before anything is sent, such a value fails
 * alone. An object value becomes its JSON once; objects inside an array are only checked here, and pg
 * makes the array.
 */
export function sendable(values: readonly unknown[]): unknown[] {
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

/** A statement with its values, for a transaction (src/database/transaction.ts). */
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

  /** The statement with these values, for a transaction (src/database/transaction.ts). */
  with(...values: unknown[]): Bound<Row> {
    return { statement: this, values };
  }

  /**
   * Its rows, run alone on a pooled connection (it commits by itself). Never inside a transaction: what
   * runs there goes through the Transaction that opened it (src/database/transaction.ts).
   */
  async run(manager: EntityManager, values: readonly unknown[] = []): Promise<Row[]> {
    if (manager.queryRunner) throw new Error('PreparedStatement.run runs alone; in a transaction, use its Transaction');
    return runAlone(manager, this, values);
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
 * A statement alone, outside any transaction, on a pooled connection taken for it (it commits by itself):
 * the reads of the hot paths and single-statement writes. A failure that means the database could not
 * serve the request is thrown as a DatabaseUnavailable.
 */
async function runAlone<Row extends QueryResultRow>(manager: EntityManager, statement: PreparedStatement<Row>, values: readonly unknown[]): Promise<Row[]> {
  const runner = manager.dataSource.createQueryRunner();
  try {
    const client = await connectionOf(runner);
    return await statement.send(client, sendable(values));
  } catch (error) {
    throw asDatabaseUnavailable(error);
  } finally {
    await runner.release();
  }
}

/** The connection a QueryRunner hands out (`QueryRunner.connect()`), or a DatabaseUnavailable. */
export async function connectionOf(runner: QueryRunner): Promise<PoolClient> {
  try {
    return (await runner.connect()) as PoolClient;
  } catch (error) {
    throw asDatabaseUnavailable(error);
  }
}

/** The rows of each answer, or the first failure. */
export function firstFailureOf(answers: PromiseSettledResult<QueryResultRow[]>[]): QueryResultRow[][] {
  const failed = answers.find((answer) => answer.status === 'rejected');
  // pg rejects with its Error objects.
  if (failed) throw failed.reason as Error;
  return answers.map((answer) => (answer as PromiseFulfilledResult<QueryResultRow[]>).value);
}

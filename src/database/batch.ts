import type { QueryResult } from 'pg';
import type { Statement } from './database';

/** A statement of a batch that did not run because one before it failed (PostgreSQL skips to the Sync). */
export class StatementSkipped extends Error {
  constructor(readonly statement: string) {
    super(`Not run: a statement before "${statement}" in its batch failed`);
  }
}

interface Entry {
  statement: Statement;
  values: unknown[];
  resolve(result: QueryResult): void;
  reject(error: Error): void;
}

/** What pg's Connection offers a query as it submits itself (pg's own Query uses the same calls). */
interface Wire {
  stream: { cork?: () => void; uncork?: () => void };
  /** Statements known to this connection, and those pg's own queries have sent a Parse for. */
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  parse(message: { name: string; text: string }): void;
  bind(message: { statement: string; values: unknown[]; valueMapper: (value: unknown) => unknown }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(message: { portal: string }): void;
  sync(): void;
}

/** pg's Query as a subclass sees it (@types/pg declares only what applications call). */
interface PgQuery {
  callback?: (error: Error | null) => void;
  /** pg sets the client's type parsers here when the query is queued. */
  _result: { _types: unknown };
}

/** pg's Result as its queries fill it. */
interface PgResult extends QueryResult {
  addFields(fields: unknown[]): void;
  parseRow(fields: unknown[]): unknown;
  addRow(row: unknown): void;
  addCommandComplete(message: { text: string }): void;
}

const pg = require('pg') as { Query: new (config: { text: string }) => PgQuery; Result: new (rowMode?: string, types?: unknown) => PgResult };

/** pg's own mapping of a JavaScript value to a parameter (Date, Buffer, arrays, objects as JSON). */
const prepareValue = (require('pg/lib/utils') as { prepareValue: (value: unknown) => unknown }).prepareValue;

/**
 * Named statements sent to PostgreSQL as one unit with a single Sync: PostgreSQL runs them in order and
 * sends all their answers in one write, where pg's query-per-statement (each with its own Sync) makes
 * it answer, and flush, statement by statement, and makes this process read them one by one. Measured
 * in a plain pg loop of four-statement transactions on this kind of machine: 230 → 120 µs of Node CPU
 * and 310 → 180 µs of PostgreSQL's per transaction.
 *
 * One entry in pg's queue, so it keeps its place among the connection's other queries (pipeline mode
 * included). A failed statement stops the batch there, as PostgreSQL skips everything up to the Sync:
 * that statement rejects with PostgreSQL's error, every later one with StatementSkipped.
 *
 * Outside a transaction block (no BEGIN before it), a batch is a transaction of its own: PostgreSQL
 * runs its statements in one implicit transaction and commits it at the Sync, or rolls it back if one
 * failed. `commitsAtSync` says when that commit is known.
 */
export class Batch extends pg.Query {
  private readonly entries: Entry[] = [];
  /** The entry whose answer arrives next. */
  private next = 0;
  private result?: PgResult;
  private rowError?: Error;
  /** Entries prepared (Parse) by this batch: PostgreSQL may not have kept them if it failed. */
  private readonly preparing = new Set<number>();
  private connection?: Wire;
  /**
   * Set when the batch failed at a statement it was preparing: whether PostgreSQL kept that statement
   * is unknown, so the connection must not be used again (a second Parse of the name would fail).
   */
  preparedUncertain = false;
  /** Settled with the implicit transaction's commit at the Sync (see commitsAtSync). */
  private syncCommit?: { promise: Promise<void>; resolve(): void; reject(error: Error): void };

  constructor() {
    super({ text: 'batch' });
    // Every entry is settled here. pg wraps the callback (its query_timeout timer is cleared there), so
    // the batch calls it once it has settled.
    this.callback = () => undefined;
  }

  /** The statements and their values, in order. */
  get statements(): ReadonlyArray<{ statement: Statement; values: unknown[] }> {
    return this.entries.map(({ statement, values }) => ({ statement, values }));
  }

  add(statement: Statement, values: unknown[] = []): Promise<QueryResult> {
    return new Promise((resolve, reject) => this.entries.push({ statement, values, resolve, reject }));
  }

  /** Puts a statement before the others (a BEGIN decided on when the batch leaves). */
  addFirst(statement: Statement): Promise<QueryResult> {
    return new Promise((resolve, reject) => this.entries.unshift({ statement, values: [], resolve, reject }));
  }

  /**
   * For a batch sent outside a transaction block: resolves once PostgreSQL has committed its implicit
   * transaction at the Sync; rejects with the error that rolled it back, PostgreSQL's own at commit
   * included (which arrives after the last statement's answer).
   */
  commitsAtSync(): Promise<void> {
    if (!this.syncCommit) {
      let resolve!: () => void;
      let reject!: (error: Error) => void;
      const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
      this.syncCommit = { promise, resolve, reject };
    }
    return this.syncCommit.promise;
  }

  requiresPreparation(): boolean {
    return true;
  }

  submit(connection: Wire): Error | null {
    this.connection = connection;
    connection.stream.cork?.();
    try {
      this.entries.forEach(({ statement, values }, index) => {
        if (connection.parsedStatements[statement.name] === undefined && connection.submittedNamedStatements[statement.name] === undefined) {
          connection.parse({ name: statement.name, text: statement.text });
          connection.parsedStatements[statement.name] = statement.text;
          this.preparing.add(index);
        }
        connection.bind({ statement: statement.name, values, valueMapper: prepareValue });
        connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '' });
      });
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(message: { fields: unknown[] }): void {
    this.result = new pg.Result(undefined, this._result._types);
    this.result.addFields(message.fields);
  }

  handleDataRow(message: { fields: unknown[] }): void {
    if (this.rowError) return;
    try {
      this.result!.addRow(this.result!.parseRow(message.fields));
    } catch (error) {
      this.rowError = error as Error;
    }
  }

  handleCommandComplete(message: { text: string }): void {
    const result = this.result ?? new pg.Result();
    result.addCommandComplete(message);
    this.result = undefined;
    const entry = this.entries[this.next++];
    if (this.rowError) {
      entry.reject(this.rowError);
      this.rowError = undefined;
    } else {
      entry.resolve(result);
    }
  }

  handleEmptyQuery(): void {
    this.entries[this.next++].resolve(new pg.Result());
  }

  /** A statement failed (PostgreSQL's error), or the connection did: the rest of the batch never ran. */
  handleError(error: Error): void {
    const failed = this.next;
    for (const index of this.preparing) {
      if (index > failed) delete this.connection?.parsedStatements[this.entries[index].statement.name];
    }
    if (this.preparing.has(failed)) {
      delete this.connection?.parsedStatements[this.entries[failed].statement.name];
      this.preparedUncertain = true;
    }
    this.entries[failed]?.reject(error);
    for (const entry of this.entries.slice(failed + 1)) entry.reject(new StatementSkipped(entry.statement.name));
    this.next = this.entries.length;
    this.syncCommit?.reject(error);
    this.callback?.(error);
  }

  handleReadyForQuery(): void {
    // Every statement answered before the Sync's ReadyForQuery; anything else is a protocol fault.
    const unanswered = this.entries.slice(this.next);
    for (const entry of unanswered) entry.reject(new StatementSkipped(entry.statement.name));
    if (unanswered.length > 0) this.syncCommit?.reject(new StatementSkipped(unanswered[0].statement.name));
    else this.syncCommit?.resolve();
    this.callback?.(null);
  }
}

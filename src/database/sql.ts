/**
 * A named SQL statement. PostgreSQL parses and plans it once per pooled connection (a prepared
 * statement); after that each use sends only its values.
 */
export interface Sql {
  readonly name: string;
  readonly text: string;
}

const known = new Map<string, string>();

/** Declares a statement at module load, where two statements with one name fail at once rather than under load. */
export function sql(name: string, text: string): Sql {
  const previous = known.get(name);
  // pg refuses a name prepared on a connection with other text; so does this, before any connection sees it.
  if (previous !== undefined && previous !== text) throw new Error(`Two SQL statements are named "${name}"`);
  known.set(name, text);
  return { name, text };
}

/** A statement with its values, for `Database.transactionOf`. */
export interface BoundSql {
  readonly statement: Sql;
  readonly values: readonly unknown[];
}

export const bind = (statement: Sql, ...values: unknown[]): BoundSql => ({ statement, values });

/** A statement declared with `sql`, by its name (for tests that examine a repository's plans). */
export function statementNamed(name: string): Sql {
  const text = known.get(name);
  if (text === undefined) throw new Error(`No SQL statement is named "${name}"`);
  return { name, text };
}

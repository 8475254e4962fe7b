import { EntityMetadata } from 'typeorm';

const quote = (name: string) => `"${name}"`;

/**
 * The entity's columns as a hand-written statement selects or returns them, `"column" AS "property"`
 * (a virtual column as its expression), so its rows come back as the entity. Made from TypeORM's
 * metadata: a column is named once, in the entity. `alias`: the table's alias in the statement; `only`:
 * these properties, for a statement that needs a few.
 */
export function selectColumns(metadata: EntityMetadata, { alias, only }: { alias?: string; only?: readonly string[] } = {}): string {
  const table = alias ?? metadata.tableName;
  return metadata.columns
    .filter((column) => (only ? only.includes(column.propertyName) : column.isSelect && !column.isVirtual))
    .map((column) => {
      const value = column.isVirtualProperty && column.query ? `(${column.query(table)})` : `${alias ? `${alias}.` : ''}${quote(column.databaseName)}`;
      return `${value} AS ${quote(column.propertyName)}`;
    })
    .join(', ');
}

/** The column of each property, for a hand-written INSERT: `"external_id", "type"`, in the order given. */
export function columnsOf<T>(metadata: EntityMetadata, properties: readonly (keyof T & string)[]): string {
  return properties
    .map((property) => {
      const column = metadata.findColumnWithPropertyName(property);
      if (!column) throw new Error(`${metadata.name} has no column ${property}`);
      return quote(column.databaseName);
    })
    .join(', ');
}

/** `$first, $first+1, …`, one per property: the placeholders of the values `columnsOf` names. */
export function placeholders(count: number, first = 1): string {
  return Array.from({ length: count }, (_, i) => `$${first + i}`).join(', ');
}

/**
 * A virtual column's query (@VirtualColumn): `created_at` in microseconds since the epoch, as text, the
 * exact position of a row in a keyset page ordered by (created_at, id); a Date keeps only milliseconds.
 */
export const MICROSECONDS_OF_CREATED_AT = (alias: string) => `(extract(epoch FROM ${alias}.created_at) * 1000000)::bigint::text`;

/**
 * `("a", "b") SELECT * FROM unnest($first::type[], …)`: the columns of `properties` and one array
 * parameter per column, for an INSERT of any number of rows with one statement text (`arraysOf` makes
 * the arrays). The types are the entity's own column types.
 */
export function unnestColumnsOf<T>(metadata: EntityMetadata, properties: readonly (keyof T & string)[], first = 1): string {
  const types = properties.map((property, index) => {
    const column = metadata.findColumnWithPropertyName(property);
    if (!column || typeof column.type !== 'string') throw new Error(`${metadata.name} has no column ${property} with a SQL type`);
    return `$${first + index}::${column.type}[]`;
  });
  return `(${columnsOf<T>(metadata, properties)}) SELECT * FROM unnest(${types.join(', ')})`;
}

/** The values of `properties` of each row, as one array per property: the parameters `unnestColumnsOf` names. */
export function arraysOf<T>(rows: readonly T[], properties: readonly (keyof T & string)[]): unknown[][] {
  return properties.map((property) => rows.map((row) => row[property]));
}

import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import type { PostgresQueryRunner } from 'typeorm/driver/postgres/PostgresQueryRunner';

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

/**
 * The one way to reach the database. `run` opens a transaction held in AsyncLocalStorage; every
 * `query` (named statements, for the hot paths) and every `manager` call (TypeORM, for the rest)
 * made inside it, however deep, joins that transaction, without a manager passed through signatures.
 * Outside `run` they use the pool directly.
 */
@Injectable()
export class TransactionContext {
  private readonly storage = new AsyncLocalStorage<EntityManager>();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The current transaction's manager, or the plain one outside a transaction. */
  get manager(): EntityManager {
    return this.storage.getStore() ?? this.dataSource.manager;
  }

  /** Runs `work` in a transaction that every `query` and `manager` call inside it joins; nested calls reuse it. */
  run<T>(work: () => Promise<T>): Promise<T> {
    if (this.storage.getStore()) return work();
    return this.dataSource.transaction((manager) => this.storage.run(manager, work));
  }

  /** Runs a named statement in the current transaction, or on any pooled connection outside one. */
  async query<R extends QueryResultRow>(sql: Statement, values: unknown[] = []): Promise<R[]> {
    const manager = this.storage.getStore();
    const client: Pool | PoolClient = manager
      ? await (manager.queryRunner as PostgresQueryRunner).connect()
      : (this.dataSource.driver as PostgresDriver).master;
    const result = await client.query<R>({ name: sql.name, text: sql.text, values });
    return result.rows;
  }
}

import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { AsyncLocalStorage } from 'node:async_hooks';
import { DataSource, EntityManager } from 'typeorm';

/**
 * A request-scoped transaction held in AsyncLocalStorage. Whoever opens it (the idempotency
 * interceptor, the webhook) makes every repository call of the services below it join the same
 * transaction, without passing a manager through every signature.
 */
@Injectable()
export class TransactionContext {
  private readonly storage = new AsyncLocalStorage<EntityManager>();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The current transaction's manager, or the plain one outside a transaction. */
  get manager(): EntityManager {
    return this.storage.getStore() ?? this.dataSource.manager;
  }

  /** Runs `work` in a transaction that every `manager` call inside it joins; nested calls reuse it. */
  run<T>(work: (manager: EntityManager) => Promise<T>): Promise<T> {
    const current = this.storage.getStore();
    if (current) return work(current);
    return this.dataSource.transaction((manager) => this.storage.run(manager, () => work(manager)));
  }
}

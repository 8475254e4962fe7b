import { EntityManager, EntitySubscriberInterface, EventSubscriber, QueryRunner, TransactionCommitEvent, TransactionRollbackEvent } from 'typeorm';

/** Where a transaction's query runner keeps what is owed once it commits (TypeORM's `QueryRunner.data`, kept for such use). */
const LISTENERS = 'afterCommit';

const owed = (runner: QueryRunner): Array<() => void> | undefined => runner.data[LISTENERS] as Array<() => void> | undefined;

/**
 * Calls `listener` once the transaction `manager` belongs to has committed, never if it rolls back;
 * at once when `manager` is in no transaction (what it wrote was committed statement by statement).
 * For signals to this process (a feed event appended, a delivery due), which must not reach anyone
 * before what they announce can be read. A listener must not throw: the commit it hears of has happened.
 */
export function afterCommit(manager: EntityManager, listener: () => void): void {
  const runner = manager.queryRunner;
  if (!runner?.isTransactionActive) return listener();
  const listeners = owed(runner);
  if (listeners) listeners.push(listener);
  else runner.data[LISTENERS] = [listener];
}

/** Forgets what `afterCommit` put on `runner`'s transaction: it will not commit. */
export function dropAfterCommit(runner: QueryRunner): void {
  delete runner.data[LISTENERS];
}

/** Runs what `afterCommit` put on a transaction when TypeORM reports its commit (every QueryRunner transaction does). */
@EventSubscriber()
export class AfterCommitSubscriber implements EntitySubscriberInterface {
  afterTransactionCommit({ queryRunner }: TransactionCommitEvent): void {
    const listeners = owed(queryRunner);
    delete queryRunner.data[LISTENERS];
    listeners?.forEach((listener) => listener());
  }

  afterTransactionRollback({ queryRunner }: TransactionRollbackEvent): void {
    dropAfterCommit(queryRunner);
  }
}

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

/**
 * Takes what `afterCommit` put on `runner`'s transaction off it, for a caller that learns for itself
 * whether the commit happened (Transaction.commit): TypeORM reports a COMMIT as a commit even when PostgreSQL
 * answered it with a rollback.
 */
export function takeAfterCommit(runner: QueryRunner): Array<() => void> {
  const listeners = owed(runner) ?? [];
  delete runner.data[LISTENERS];
  return listeners;
}

/**
 * Runs what `afterCommit` put on a transaction when TypeORM reports its commit. A savepoint's release or
 * rollback is reported the same way while the transaction goes on; only its end counts.
 */
@EventSubscriber()
export class AfterCommitSubscriber implements EntitySubscriberInterface {
  afterTransactionCommit({ queryRunner }: TransactionCommitEvent): void {
    if (queryRunner.isTransactionActive) return;
    takeAfterCommit(queryRunner).forEach((listener) => listener());
  }

  afterTransactionRollback({ queryRunner }: TransactionRollbackEvent): void {
    if (queryRunner.isTransactionActive) return;
    takeAfterCommit(queryRunner);
  }
}

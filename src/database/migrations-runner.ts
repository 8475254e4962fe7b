import { DataSource, Migration } from 'typeorm';

/** Arbitrary but fixed: every instance of the gateway contends for this one advisory lock. */
export const MIGRATION_LOCK_KEY = 7_340_214_561;

/**
 * Runs `work` while holding the migration advisory lock, so several instances starting together
 * apply each migration exactly once: the first one migrates, the others wait and then find nothing to do.
 */
async function withMigrationLock<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      return await work();
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}

export function runMigrations(dataSource: DataSource): Promise<Migration[]> {
  return withMigrationLock(dataSource, () => dataSource.runMigrations({ transaction: 'each' }));
}

export function revertLastMigration(dataSource: DataSource): Promise<void> {
  return withMigrationLock(dataSource, () => dataSource.undoLastMigration({ transaction: 'each' }));
}

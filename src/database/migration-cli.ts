import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { ConfigValidationError, loadConfig } from '../config/app-config.js';
import { loadEnvFile } from '../startup/env-file.js';
import { DocumentEventEntity } from '../documents/document-event.entity.js';
import { DocumentEventsRepository } from '../documents/document-events.repository.js';
import { RESTORE_GUIDE } from '../documents/feed-transaction-check.js';
import { DatabaseLocation, locateDatabase } from './database-location.js';
import { revertLastMigration, runMigrations } from './migrations-runner.js';
import { advanceTransactionCounter, resetwalEpochAbove } from './transaction-counter.js';
import { buildDataSourceOptions } from './typeorm-options.js';

const USAGE = 'usage: migration-cli run | revert | advance-xid [--to <transaction id>]';
const out = (line: string) => process.stdout.write(`${line}\n`);

/**
 * After a logical dump is restored into another cluster: advances this cluster's transaction counter past
 * the newest feed event's transaction, or past `to` when that is higher (see FeedTransactionCheck).
 */
async function advanceXid(database: DatabaseLocation, to: bigint | null): Promise<void> {
  const dataSource = await new DataSource(buildDataSourceOptions(database.url)).initialize();
  const events = new DocumentEventsRepository(dataSource.getRepository(DocumentEventEntity));
  const [{ newest, next }, pace] = await Promise.all([events.transactions(), events.pace(10_000)]).finally(() => dataSource.destroy());
  out(`Newest feed event: transaction ${newest ?? 'none (no events)'}; this cluster's next transaction: ${next}`);
  if (pace?.earlierXid && pace.earlierAt && pace.newestAt > pace.earlierAt) {
    // Clients that read on after the dump hold cursors past its newest event, up to the old cluster's
    // counter when it was lost: at the pace of the restored feed, about this much by now.
    const perSecond = Number(BigInt(pace.newestXid) - BigInt(pace.earlierXid)) / ((pace.newestAt.getTime() - pace.earlierAt.getTime()) / 1000);
    const estimate = BigInt(pace.newestXid) + BigInt(Math.ceil((perSecond * (Date.now() - pace.newestAt.getTime())) / 1000));
    out(
      `Transactions went by at about ${Math.round(perSecond)} a second before the dump: had the old cluster gone on until now, its counter would be near ${estimate}. ` +
        "Clients that read the feed after the dump hold cursors up to that; to keep their feeds going too, pass --to with the old cluster's last counter (or this estimate).",
    );
  }
  const target = [newest === null ? null : BigInt(newest) + 1n, to].reduce<bigint | null>((a, b) => (b !== null && (a === null || b > a) ? b : a), null);
  if (target === null || BigInt(next) > target) {
    out('Nothing to do: the counter is already past it.');
    return;
  }
  out(
    `Advancing to ${target}: ${target - BigInt(next)} transactions. On a cluster you run yourself this is instant instead: stop it cleanly, ` +
      `run pg_resetwal -e ${resetwalEpochAbove(target)} <its data directory>, and start it again (${RESTORE_GUIDE}).`,
  );
  let shown = 0;
  const done = await advanceTransactionCounter(database.url, target, (now) => {
    if (Date.now() - shown < 5000) return;
    shown = Date.now();
    out(`  next transaction ${now} of ${target}`);
  });
  out(`Done: this cluster's next transaction is ${done}.`);
}

/**
 * `migration:run` / `migration:revert` as a deploy step, under the same advisory lock the application
 * takes at start; `advance-xid` after a logical restore into another cluster. Against DATABASE_URL, or
 * the embedded cluster under DATA_DIR when it is unset.
 */
async function main([command, ...rest]: string[]): Promise<void> {
  const to = command === 'advance-xid' && rest[0] === '--to' && /^\d{1,20}$/.test(rest[1] ?? '') ? BigInt(rest[1]) : null;
  const valid = command === 'run' || command === 'revert' || (command === 'advance-xid' && (rest.length === 0 || to !== null));
  if (!valid) throw new Error(USAGE);
  loadEnvFile();
  const config = loadConfig();
  const database = await locateDatabase(config);
  if (command === 'advance-xid') {
    try {
      return await advanceXid(database, to);
    } finally {
      await database.release();
    }
  }
  const dataSource = await new DataSource(buildDataSourceOptions(database.url)).initialize();
  try {
    if (command === 'run') {
      const applied = await runMigrations(dataSource);
      process.stdout.write(applied.length ? `Applied: ${applied.map((m) => m.name).join(', ')}\n` : 'No pending migrations\n');
    } else {
      await revertLastMigration(dataSource);
      process.stdout.write('Reverted the last migration\n');
    }
  } finally {
    await dataSource.destroy();
    await database.release();
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigValidationError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(78);
  }
  const what = process.argv[2] === 'advance-xid' ? 'Advancing the transaction counter' : 'Migration';
  process.stderr.write(`${what} failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});

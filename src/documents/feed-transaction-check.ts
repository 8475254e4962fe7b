import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { describeFailure, isDatabaseUnavailable } from '../common/database-failure.js';
import { DocumentEventsRepository } from './document-events.repository.js';

export const RESTORE_GUIDE = 'docs/operations.md#backup-and-restore';

/** Thrown at start when the cluster's transaction counter is behind the feed (see FeedTransactionCheck). */
export class TransactionCounterBehind extends Error {
  constructor(
    readonly newest: string,
    readonly next: string,
  ) {
    super(
      `The newest feed event was written by transaction ${newest}, but this PostgreSQL cluster's next transaction is ${next}: ` +
        'the database was restored from a logical dump into another cluster, and the feed would hide new events behind the restored ones. ' +
        `Advance the counter before starting the gateway: node dist/database/migration-cli.js advance-xid (see ${RESTORE_GUIDE}).`,
    );
    this.name = 'TransactionCounterBehind';
  }
}

/**
 * The feed orders events by the id of the transaction that wrote them (xid8) and shows only those older
 * than every transaction still running. A logical dump carries the events' ids but not the counter of
 * the cluster they came from: restored into another (newer) cluster, new events would get smaller ids
 * than the restored ones, come before them, and stay invisible to clients holding a cursor among them.
 * So the gateway refuses to start on such a database until the counter is advanced past the feed.
 * Physical backups and point-in-time recovery keep the counter, and never trip this. Checked when the
 * database answers at start: an instance started with MIGRATIONS_RUN=false while the database is down
 * (or not migrated yet) still starts, unready, as it always has.
 */
@Injectable()
export class FeedTransactionCheck implements OnModuleInit {
  private readonly logger = new Logger('Database');

  constructor(private readonly events: DocumentEventsRepository) {}

  async onModuleInit(): Promise<void> {
    let counter: { newest: string | null; next: string };
    try {
      counter = await this.events.transactions();
    } catch (error) {
      const undefinedTable = (error as { code?: unknown }).code === '42P01';
      if (!isDatabaseUnavailable(error) && !undefinedTable) throw error;
      this.logger.warn(
        { ...describeFailure(error) },
        'Could not check the transaction counter against the feed at start (the database did not answer, or is not migrated)',
      );
      return;
    }
    if (counter.newest !== null && BigInt(counter.next) <= BigInt(counter.newest)) throw new TransactionCounterBehind(counter.newest, counter.next);
  }
}

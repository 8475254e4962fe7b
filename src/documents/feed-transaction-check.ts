import { Injectable, OnModuleInit } from '@nestjs/common';
import { DocumentEventsRepository } from './document-events.repository';

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
 * Physical backups and point-in-time recovery keep the counter, and never trip this.
 */
@Injectable()
export class FeedTransactionCheck implements OnModuleInit {
  constructor(private readonly events: DocumentEventsRepository) {}

  async onModuleInit(): Promise<void> {
    const { newest, next } = await this.events.transactions();
    if (newest !== null && BigInt(next) <= BigInt(newest)) throw new TransactionCounterBehind(newest, next);
  }
}

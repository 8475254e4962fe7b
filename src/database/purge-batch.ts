/**
 * One batch of a retention purge (src/retention): each module's repository deletes, in the transaction it is
 * given, the expired rows among the next few by primary key after `after`, walking the key in order (ids
 * grow with time, and the walk needs no index of its own).
 */
export interface PurgeBatch {
  /** Rows of the table itself deleted (rows that went with them through a foreign key are counted apart). */
  deleted: number;
  /** The last key looked at: where the next batch starts. Null when there was nothing after `after`. */
  last: string | null;
  /** Whether every row looked at was old enough, so that older rows may follow; false ends the walk. */
  more: boolean;
}

/** What a purge is given: rows older than `olderThan` (an ISO 8601 duration, read by PostgreSQL), the next `limit` after `after`. */
export interface PurgeRange {
  olderThan: string;
  after: string;
  limit: number;
}

import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { Database, statement } from '../database/database';

export const MAX_FAILURES_PER_MINUTE = 10;

const RESERVE = statement(
  'admin-auth-failure-reserve',
  `INSERT INTO admin_auth_failures (remote_address, window_start, failures)
       VALUES ($1, date_trunc('minute', now()), 1)
       ON CONFLICT (remote_address, window_start) DO UPDATE SET failures = admin_auth_failures.failures + 1
       RETURNING failures,
                 CEIL(EXTRACT(EPOCH FROM (window_start + interval '1 minute' - now())))::int AS "secondsLeft"`,
);

const FORGIVE = statement(
  'admin-auth-failure-forgive',
  `UPDATE admin_auth_failures SET failures = failures - 1
        WHERE remote_address = $1 AND window_start = date_trunc('minute', now()) AND failures > 0`,
);

const PURGE = statement('admin-auth-failures-purge', `DELETE FROM admin_auth_failures WHERE window_start < now() - interval '1 hour'`);

/**
 * Counts failed admin-token attempts per address in fixed one-minute windows, in PostgreSQL so
 * that all instances share one count. After MAX_FAILURES_PER_MINUTE the address is refused until
 * the minute is over.
 */
@Injectable()
export class AdminAuthFailuresService {
  constructor(private readonly db: Database) {}

  /**
   * Counts an attempt as failed before its token is compared, in one atomic statement, so parallel
   * guesses cannot all slip past the limit; `forgive` takes it back when the token was right.
   * Returns the failures of this window including this one, and the seconds until it closes.
   */
  async reserveAttempt(address: string): Promise<{ failures: number; secondsLeft: number }> {
    const [row] = await this.db.query<{ failures: number; secondsLeft: number }>(RESERVE, [address]);
    return { failures: row.failures, secondsLeft: Math.max(1, row.secondsLeft) };
  }

  async forgive(address: string): Promise<void> {
    await this.db.query(FORGIVE, [address]);
  }

  /** Old windows mean nothing any more. */
  @Interval('admin-auth-failures-purge', 600_000)
  async purge(): Promise<void> {
    await this.db.query(PURGE);
  }
}

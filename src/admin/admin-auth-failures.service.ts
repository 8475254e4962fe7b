import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export const MAX_FAILURES_PER_MINUTE = 10;

/**
 * Counts failed admin-token attempts per address in fixed one-minute windows, in PostgreSQL so
 * that all instances share one count. After MAX_FAILURES_PER_MINUTE the address is refused until
 * the minute is over.
 */
@Injectable()
export class AdminAuthFailuresService {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Seconds until the current window closes when `address` is locked out, else null. */
  async lockedOutFor(address: string): Promise<number | null> {
    const [row] = await this.dataSource.query(
      `SELECT CEIL(EXTRACT(EPOCH FROM (date_trunc('minute', now()) + interval '1 minute' - now())))::int AS seconds
         FROM admin_auth_failures
        WHERE remote_address = $1 AND window_start = date_trunc('minute', now()) AND failures >= $2`,
      [address, MAX_FAILURES_PER_MINUTE],
    );
    return row ? Math.max(1, row.seconds) : null;
  }

  /**
   * Counts an attempt as failed before its token is compared, in one atomic statement, so parallel
   * guesses cannot all slip past the limit; `forgive` takes it back when the token was right.
   * Returns the failures of this window including this one.
   */
  async reserveAttempt(address: string): Promise<number> {
    const [row] = await this.dataSource.query(
      `INSERT INTO admin_auth_failures (remote_address, window_start, failures)
       VALUES ($1, date_trunc('minute', now()), 1)
       ON CONFLICT (remote_address, window_start) DO UPDATE SET failures = admin_auth_failures.failures + 1
       RETURNING failures`,
      [address],
    );
    return row.failures;
  }

  async forgive(address: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE admin_auth_failures SET failures = failures - 1
        WHERE remote_address = $1 AND window_start = date_trunc('minute', now()) AND failures > 0`,
      [address],
    );
  }

  /** Old windows mean nothing any more. */
  @Interval('admin-auth-failures-purge', 600_000)
  async purge(): Promise<void> {
    await this.dataSource.query(`DELETE FROM admin_auth_failures WHERE window_start < now() - interval '1 hour'`);
  }
}

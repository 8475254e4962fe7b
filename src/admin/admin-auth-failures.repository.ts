import { Injectable } from '@nestjs/common';
import { Database } from '../database/database';
import { sql } from '../database/sql';

const RESERVE = sql(
  'admin-auth-failure-reserve',
  `INSERT INTO admin_auth_failures (remote_address, window_start, failures)
       VALUES ($1, date_trunc('minute', now()), 1)
       ON CONFLICT (remote_address, window_start) DO UPDATE SET failures = admin_auth_failures.failures + 1
       RETURNING failures,
                 CEIL(EXTRACT(EPOCH FROM (window_start + interval '1 minute' - now())))::int AS "secondsLeft"`,
);

const FORGIVE = sql(
  'admin-auth-failure-forgive',
  `UPDATE admin_auth_failures SET failures = failures - 1
        WHERE remote_address = $1 AND window_start = date_trunc('minute', now()) AND failures > 0`,
);

const PURGE = sql('admin-auth-failures-purge', `DELETE FROM admin_auth_failures WHERE window_start < now() - interval '1 hour'`);

/** Failed admin sign-ins per address and minute (table admin_auth_failures). */
@Injectable()
export class AdminAuthFailuresRepository {
  constructor(private readonly db: Database) {}

  /** Counts one more failure in this minute's window; the window's count and the seconds until it closes. */
  async reserve(address: string): Promise<{ failures: number; secondsLeft: number }> {
    const [row] = await this.db.query<{ failures: number; secondsLeft: number }>(RESERVE, [address]);
    return row;
  }

  async forgive(address: string): Promise<void> {
    await this.db.query(FORGIVE, [address]);
  }

  async purge(): Promise<void> {
    await this.db.query(PURGE);
  }
}

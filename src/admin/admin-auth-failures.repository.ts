import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { AdminAuthFailureEntity } from './admin-auth-failure.entity.js';

/**
 * One more failure in this minute's window, in one atomic statement (an upsert that counts: ON CONFLICT …
 * DO UPDATE with the row's own value); the window's count and the seconds until it closes.
 */
const COUNT_FAILURE = `INSERT INTO admin_auth_failures (remote_address, window_start, failures)
       VALUES ($1, date_trunc('minute', now()), 1)
       ON CONFLICT (remote_address, window_start) DO UPDATE SET failures = admin_auth_failures.failures + 1
       RETURNING failures, CEIL(EXTRACT(EPOCH FROM (window_start + interval '1 minute' - now())))::int AS "secondsLeft"`;

/** Failed admin sign-ins per address and minute (table admin_auth_failures). */
@Injectable()
export class AdminAuthFailuresRepository {
  constructor(@InjectRepository(AdminAuthFailureEntity) private readonly failures: Repository<AdminAuthFailureEntity>) {}

  async countFailure(address: string): Promise<{ failures: number; secondsLeft: number }> {
    const [row] = await this.failures.query<Array<{ failures: number; secondsLeft: number }>>(COUNT_FAILURE, [address]);
    return row;
  }

  /** Windows older than an hour. */
  async purge(): Promise<void> {
    await this.failures.createQueryBuilder().delete().where("window_start < now() - interval '1 hour'").execute();
  }
}

import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { AdminAuthFailuresRepository } from './admin-auth-failures.repository';

export const MAX_FAILURES_PER_MINUTE = 10;

/**
 * Counts failed admin-token attempts per address in fixed one-minute windows, in PostgreSQL so
 * that all instances share one count. After MAX_FAILURES_PER_MINUTE the address is refused until
 * the minute is over.
 */
@Injectable()
export class AdminAuthFailuresService {
  constructor(private readonly failures: AdminAuthFailuresRepository) {}

  /**
   * Counts an attempt as failed before its token is compared, in one atomic statement, so parallel
   * guesses cannot all slip past the limit; `forgive` takes it back when the token was right.
   * Returns the failures of this window including this one, and the seconds until it closes.
   */
  async reserveAttempt(address: string): Promise<{ failures: number; secondsLeft: number }> {
    const { failures, secondsLeft } = await this.failures.reserve(address);
    return { failures, secondsLeft: Math.max(1, secondsLeft) };
  }

  async forgive(address: string): Promise<void> {
    await this.failures.forgive(address);
  }

  /** Old windows mean nothing any more. */
  @Interval('admin-auth-failures-purge', 600_000)
  async purge(): Promise<void> {
    await this.failures.purge();
  }
}

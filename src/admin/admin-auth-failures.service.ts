import { Injectable } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { AdminAuthFailuresRepository } from './admin-auth-failures.repository.js';

export const MAX_FAILURES_PER_MINUTE = 10;

/**
 * Counts failed admin credentials per address in fixed one-minute windows, in PostgreSQL so that all
 * instances share one count. Past MAX_FAILURES_PER_MINUTE, further failures from the address are answered
 * 429 until the minute is over; a valid credential is never refused because of them (README, "Administration").
 */
@Injectable()
export class AdminAuthFailuresService {
  constructor(private readonly failures: AdminAuthFailuresRepository) {}

  /**
   * One more failure, counted in one atomic statement, so parallel guesses all count. Returns the failures
   * of this window including this one, and the seconds until it closes.
   */
  async recordFailure(address: string): Promise<{ failures: number; secondsLeft: number }> {
    const { failures, secondsLeft } = await this.failures.countFailure(address);
    return { failures, secondsLeft: Math.max(1, secondsLeft) };
  }

  /** Old windows mean nothing any more. */
  @Interval('admin-auth-failures-purge', 600_000)
  async purge(): Promise<void> {
    await this.failures.purge();
  }
}

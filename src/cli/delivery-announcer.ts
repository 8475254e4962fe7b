import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { DeliveryClaimsRepository } from '../outbound-webhooks/delivery-claims.repository.js';
import { DELIVERIES_CHANNEL } from '../outbound-webhooks/delivery-worker.js';

/** The payload names no instance, so every gateway instance's worker wakes (each ignores only its own name). */
export const CLI_ANNOUNCEMENT = 'cli';

/**
 * Stands in for the DeliveryWorker in the CLI, which must not deliver anything itself: a short-lived
 * process would claim deliveries and die holding their leases. When a command makes deliveries due (a
 * retry, an endpoint enabled again), it sends the NOTIFY the gateway's workers listen for, so they start
 * at once rather than at their next poll. The process waits for the NOTIFY before it closes the pool.
 */
@Injectable()
export class DeliveryAnnouncer implements BeforeApplicationShutdown {
  private readonly sent: Promise<void>[] = [];
  /** Why a NOTIFY failed, for the CLI to say (the change is committed; the gateway finds it by polling). */
  failure: unknown = null;

  constructor(private readonly claims: DeliveryClaimsRepository) {}

  announce(): void {
    this.sent.push(
      this.claims.notify(DELIVERIES_CHANNEL, CLI_ANNOUNCEMENT).catch((error: unknown) => {
        this.failure = error;
      }),
    );
  }

  /** Every NOTIFY sent so far has been answered. */
  async settled(): Promise<void> {
    await Promise.all(this.sent);
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.settled();
  }
}

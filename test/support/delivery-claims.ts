import { jest } from '@jest/globals';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ClaimRequest, DeliveryClaimsRepository } from '../../src/outbound-webhooks/delivery-claims.repository.js';
import { waitFor } from './processes.js';

export interface ClaimWatch {
  /** The claim rounds started since the watch began (or since the test emptied this list), in order. */
  rounds: ClaimRequest[];
  /** Resolves once no claim round is under way. */
  idle(): Promise<void>;
  restore(): void;
}

/**
 * Watches the push delivery worker's claim rounds of one instance. A test that changes what the next round
 * decides (EventLoopLoad.busy mocked) first waits for `idle()`: a round that began before the change, slowed
 * down by a busy machine, could otherwise still take what the test creates next. Start it as soon as the
 * instance is up, so that every round after is seen.
 */
export function watchClaims(app: NestFastifyApplication): ClaimWatch {
  const claims = app.get(DeliveryClaimsRepository);
  const claim = claims.claim.bind(claims);
  const underWay = new Set<Promise<unknown>>();
  const rounds: ClaimRequest[] = [];
  const spy = jest.spyOn(claims, 'claim').mockImplementation((request) => {
    rounds.push(request);
    const round = claim(request);
    underWay.add(round);
    round.then(
      () => underWay.delete(round),
      () => underWay.delete(round),
    );
    return round;
  });
  return {
    rounds,
    idle: async () => {
      await waitFor(async () => underWay.size === 0, 'the claim rounds under way to end');
    },
    restore: () => spy.mockRestore(),
  };
}

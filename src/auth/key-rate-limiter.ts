import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { Gcra, RateDecision } from './gcra';

const SWEEP_INTERVAL_MS = 60_000;

/**
 * RATE_LIMIT_PER_MINUTE per API key, counted in this process (GCRA, constant work per request): with
 * several instances behind a balancer each enforces the limit on its own share of the traffic.
 */
@Injectable()
export class KeyRateLimiter implements OnApplicationShutdown {
  private readonly gcra: Gcra;
  private readonly sweeper: NodeJS.Timeout;

  constructor(config: AppConfig) {
    this.gcra = new Gcra(config.RATE_LIMIT_PER_MINUTE);
    this.sweeper = setInterval(() => this.gcra.sweep(), SWEEP_INTERVAL_MS).unref();
  }

  take(keyId: string): RateDecision {
    return this.gcra.take(keyId);
  }

  onApplicationShutdown(): void {
    clearInterval(this.sweeper);
  }
}

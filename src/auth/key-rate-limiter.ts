import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { AppError } from '../common/app-error';
import { AppConfig } from '../config/app-config';
import { Gcra } from './gcra';

const SWEEP_INTERVAL_MS = 60_000;

/**
 * RATE_LIMIT_PER_MINUTE per API key, counted in this process (GCRA, constant work per request):
 * with several instances behind a balancer each enforces the limit on its own share of the traffic.
 */
@Injectable()
export class KeyRateLimiter implements OnApplicationShutdown {
  private readonly gcra: Gcra;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly config: AppConfig) {
    this.gcra = new Gcra(config.RATE_LIMIT_PER_MINUTE);
    this.sweeper = setInterval(() => this.gcra.sweep(), SWEEP_INTERVAL_MS).unref();
  }

  consume(keyId: string): void {
    const decision = this.gcra.take(keyId);
    if (!decision.allowed) {
      throw new AppError('RATE_LIMITED', `More than ${this.config.RATE_LIMIT_PER_MINUTE} requests per minute with this API key`, undefined, {
        'Retry-After': String(decision.retryAfterSeconds),
      });
    }
  }

  onApplicationShutdown(): void {
    clearInterval(this.sweeper);
  }
}

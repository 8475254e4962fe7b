import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { ThrottlerStorageService } from '@nestjs/throttler';
import { AppError } from '../common/app-error';
import { AppConfig } from '../config/app-config';

const WINDOW_MS = 60_000;

/**
 * RATE_LIMIT_PER_MINUTE per API key, counted by @nestjs/throttler's storage in this process: with
 * several instances behind a balancer each enforces the limit on its own share of the traffic.
 */
@Injectable()
export class KeyRateLimiter implements OnApplicationShutdown {
  private readonly storage = new ThrottlerStorageService();

  constructor(private readonly config: AppConfig) {}

  async consume(keyId: string): Promise<void> {
    const limit = this.config.RATE_LIMIT_PER_MINUTE;
    const record = await this.storage.increment(keyId, WINDOW_MS, limit, WINDOW_MS, 'api-key');
    if (record.isBlocked) {
      const retryAfter = Math.max(1, Math.ceil(record.timeToBlockExpire));
      throw new AppError('RATE_LIMITED', `More than ${limit} requests per minute with this API key`, undefined, {
        'Retry-After': String(retryAfter),
      });
    }
  }

  onApplicationShutdown(): void {
    this.storage.onApplicationShutdown();
  }
}

import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { describeFailure } from '../common/database-failure.js';
import { ApiKeysRepository } from './api-keys.repository.js';

const FLUSH_INTERVAL_MS = 5000;
export const KEY_USAGE_FLUSH_JOB = 'key-usage-flush';

/**
 * Remembers when each key was last used and writes it in one statement every few seconds, so an
 * authenticated request costs no write. lastUsedAt may therefore lag by up to FLUSH_INTERVAL_MS.
 */
@Injectable()
export class KeyUsageRecorder implements BeforeApplicationShutdown {
  private readonly logger = new Logger(KeyUsageRecorder.name);
  private pending = new Map<string, Date>();

  constructor(private readonly keys: ApiKeysRepository) {}

  record(keyId: string): void {
    this.pending.set(keyId, new Date());
  }

  @Interval(KEY_USAGE_FLUSH_JOB, FLUSH_INTERVAL_MS)
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.keys.recordUsage(batch);
    } catch (error) {
      // Keep what could not be written for the next round, unless a newer use replaced it.
      for (const [id, at] of batch) if (!this.pending.has(id)) this.pending.set(id, at);
      this.logger.warn(describeFailure(error), 'Could not record key usage; will retry');
    }
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.flush();
  }
}

import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { Database, statement } from '../database/database';

const FLUSH_INTERVAL_MS = 5000;
export const KEY_USAGE_FLUSH_JOB = 'key-usage-flush';

const RECORD_USAGE = statement(
  'api-key-usage',
  `UPDATE api_keys AS k SET last_used_at = GREATEST(k.last_used_at, u.used_at)
     FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, used_at)
    WHERE k.id = u.id`,
);

/**
 * Remembers when each key was last used and writes it in one statement every few seconds, so an
 * authenticated request costs no write. lastUsedAt may therefore lag by up to FLUSH_INTERVAL_MS.
 */
@Injectable()
export class KeyUsageRecorder implements BeforeApplicationShutdown {
  private readonly logger = new Logger(KeyUsageRecorder.name);
  private pending = new Map<string, Date>();

  constructor(private readonly db: Database) {}

  record(keyId: string): void {
    this.pending.set(keyId, new Date());
  }

  @Interval(KEY_USAGE_FLUSH_JOB, FLUSH_INTERVAL_MS)
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.db.query(RECORD_USAGE, [[...batch.keys()], [...batch.values()].map((d) => d.toISOString())]);
    } catch (error) {
      // Keep what could not be written for the next round, unless a newer use replaced it.
      for (const [id, at] of batch) if (!this.pending.has(id)) this.pending.set(id, at);
      this.logger.warn({ code: (error as { code?: unknown }).code }, 'Could not record key usage; will retry');
    }
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.flush();
  }
}

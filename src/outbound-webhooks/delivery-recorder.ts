import { Logger } from '@nestjs/common';
import { describeFailure } from '../common/database-failure.js';
import { AttemptRecord, DeliveryClaimsRepository } from './delivery-claims.repository.js';
import type { AttemptResult } from './delivery-sender.js';
import type { AttemptOutcome } from './outbound-metrics.js';

export interface RecordedAttempt {
  deliveryId: string;
  attemptedAt: Date;
  result: AttemptResult;
  outcome: AttemptOutcome;
  /** For `retrying`: seconds until the next attempt. */
  delaySeconds: number | null;
}

/** A batch is written this long after its first attempt finished, or as soon as it holds FLUSH_SIZE. */
const FLUSH_DELAY_MS = 20;
const FLUSH_SIZE = 64;

const DELIVERY_STATUS: Record<AttemptOutcome, AttemptRecord['status']> = { succeeded: 'succeeded', retrying: 'pending', failed: 'failed', gone: 'failed' };

/**
 * Writes finished attempts in batches: one statement per batch records every attempt, the deliveries'
 * new states and their endpoints' health, instead of one per attempt. A delivery stays leased by this
 * instance until its batch is written, so no other instance attempts it meanwhile; a crash before the
 * write leaves it to be attempted again after the lease (at least once), like a crash during the attempt.
 */
export class DeliveryRecorder {
  private readonly logger = new Logger(DeliveryRecorder.name);
  private pending: RecordedAttempt[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly claims: DeliveryClaimsRepository,
    private readonly instance: string,
    private readonly onRecorded: (attempts: RecordedAttempt[]) => void,
  ) {}

  add(attempt: RecordedAttempt): void {
    this.pending.push(attempt);
    if (this.pending.length >= FLUSH_SIZE) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_DELAY_MS);
  }

  /** Writes what is buffered (after the batch being written, if any); resolves when all of it is written. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = [];
    if (batch.length > 0) this.writing = this.writing.then(() => this.write(batch));
    return this.writing;
  }

  private async write(batch: RecordedAttempt[]): Promise<void> {
    const records = batch.map(({ deliveryId, attemptedAt, result, outcome, delaySeconds }) => ({
      deliveryId,
      outcome,
      status: DELIVERY_STATUS[outcome],
      delaySeconds,
      attemptedAt,
      responseStatus: result.status,
      error: result.error,
      durationMs: result.durationMs,
      responseExcerpt: result.excerpt,
    }));
    try {
      await this.claims.record(records, this.instance);
    } catch (error) {
      this.logger.warn({ ...describeFailure(error), attempts: batch.length }, 'Recording push delivery attempts failed; they are retried after their lease');
      return;
    }
    this.onRecorded(batch);
  }
}

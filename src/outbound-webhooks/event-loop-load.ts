import { Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { performance } from 'node:perf_hooks';

/** How often the event loop's utilisation is sampled: `busy` describes the last such window. */
const WINDOW_MS = 50;
/** The share of a window spent running code, not waiting for I/O, from which the loop counts as saturated. */
const BUSY_UTILIZATION = 0.9;

/**
 * Whether this instance's event loop was saturated in the last window, as it is while it answers a
 * burst of requests (or works through anything else at full speed): work that can wait (push
 * deliveries) asks before it takes more.
 */
@Injectable()
export class EventLoopLoad implements OnModuleInit, OnApplicationShutdown {
  private last = performance.eventLoopUtilization();
  private saturated = false;
  private timer?: NodeJS.Timeout;

  onModuleInit(): void {
    // The first window starts when sampling does, not when the class was built (start-up work is not load).
    this.last = performance.eventLoopUtilization();
    this.timer = setInterval(() => this.sample(), WINDOW_MS).unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  busy(): boolean {
    return this.saturated;
  }

  private sample(): void {
    const now = performance.eventLoopUtilization();
    this.saturated = performance.eventLoopUtilization(now, this.last).utilization >= BUSY_UTILIZATION;
    this.last = now;
  }
}

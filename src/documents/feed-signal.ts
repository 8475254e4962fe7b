import { Injectable } from '@nestjs/common';

/**
 * Tells whoever listens (the push delivery worker) that events were appended to the feed and committed,
 * in this process. A listener must not throw: the commit it hears of has happened.
 */
@Injectable()
export class FeedSignal {
  private readonly listeners: Array<() => void> = [];

  subscribe(listener: () => void): void {
    this.listeners.push(listener);
  }

  appended(): void {
    for (const listener of this.listeners) listener();
  }
}

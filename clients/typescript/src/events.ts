import { GatewayError } from './errors';
import { sleep } from './retry';
import type { CallOptions, Transport } from './transport';
import type { DocumentEvent, EventPage } from './types';

export interface ListEventsOptions extends CallOptions {
  /** Where to start: a `cursor` stored earlier. Omitted: the beginning of the feed. */
  after?: string;
  /** Events per request, 1 to 100 (the gateway's default is 20). */
  limit?: number;
  /**
   * Called, and awaited, each time `cursor` moves: every event before the new cursor has been yielded
   * and the loop has come back for more, so it has been handled. The place to store the cursor.
   */
  onCursor?: (cursor: string) => void | Promise<void>;
}

export interface FollowEventsOptions extends ListEventsOptions {
  /** The wait before polling again after events came (and the first wait after an empty answer). Default 500 ms. */
  minIntervalMs?: number;
  /** The longest wait between polls while the feed stays empty, or while the gateway cannot be reached. Default 10 s. */
  maxIntervalMs?: number;
  /** Told of each failure that following waits out (its retries spent, the gateway still unreachable or refusing for now), e.g. to log it. */
  onError?: (error: GatewayError) => void;
}

interface Polling {
  minIntervalMs: number;
  maxIntervalMs: number;
  onError?: (error: GatewayError) => void;
}

type ReadPage = (after: string | undefined, signal: AbortSignal | undefined) => Promise<EventPage>;

/**
 * The feed as an async iterable of events, each yielded once, in the gateway's order.
 *
 * `cursor` is where to resume so that no event is missed: it moves to a page's `nextCursor` only once
 * every event of that page has been yielded and the loop has come back for more (then `onCursor` is
 * called). A loop left early (`break`, an exception, an abort) leaves it before the events it did not
 * finish. Resuming from a stored cursor after a crash may repeat what was handled since it was stored,
 * so de-duplicate on `event.id` where a repeat matters. Iterating again continues from `cursor`.
 */
export class EventFeed implements AsyncIterable<DocumentEvent> {
  cursor: string | undefined;
  private readonly signal: AbortSignal | undefined;
  private readonly onCursor: ListEventsOptions['onCursor'];

  constructor(
    private readonly readPage: ReadPage,
    options: ListEventsOptions,
    private readonly polling?: Polling,
  ) {
    this.cursor = options.after;
    this.signal = options.signal;
    this.onCursor = options.onCursor;
  }

  [Symbol.asyncIterator](): AsyncIterator<DocumentEvent> {
    return this.polling ? this.follow(this.polling) : this.list();
  }

  /** Until the gateway says nothing more is visible now (`hasMore: false`). An abort rejects with its reason. */
  private async *list(): AsyncGenerator<DocumentEvent, void, undefined> {
    for (;;) {
      const page = await this.readPage(this.cursor, this.signal);
      for (const event of page.data) {
        this.signal?.throwIfAborted();
        yield event;
      }
      await this.advance(page);
      if (!page.hasMore) return;
    }
  }

  /**
   * Polls for ever: at once while pages come full, after `minIntervalMs` when events came, and twice as
   * long after each empty answer up to `maxIntervalMs`. A gateway that cannot be reached, or refuses
   * for now (429, 503), is waited for the same way; any other error ends the iteration by rejecting.
   * An abort ends it quietly: following ends by being told to.
   */
  private async *follow({ minIntervalMs, maxIntervalMs, onError }: Polling): AsyncGenerator<DocumentEvent, void, undefined> {
    let emptyPolls = 0;
    while (!this.signal?.aborted) {
      let page: EventPage;
      try {
        page = await this.readPage(this.cursor, this.signal);
      } catch (error) {
        if (this.signal?.aborted) return;
        if (!(error instanceof GatewayError && error.retryable)) throw error;
        onError?.(error);
        if (!(await this.pause(maxIntervalMs))) return;
        continue;
      }
      for (const event of page.data) {
        // The rest of the page stays unyielded, and the cursor before it, for the next reader.
        if (this.signal?.aborted) return;
        yield event;
      }
      await this.advance(page);
      if (page.hasMore) continue;
      emptyPolls = page.data.length === 0 ? emptyPolls + 1 : 0;
      const interval = Math.min(maxIntervalMs, minIntervalMs * 2 ** Math.max(0, emptyPolls - 1));
      // Half fixed, half random: many followers started together spread out.
      if (!(await this.pause(interval / 2 + Math.random() * (interval / 2)))) return;
    }
  }

  /** Moves the cursor past a page whose every event has been handled. */
  private async advance(page: EventPage): Promise<void> {
    if (page.nextCursor === null || page.nextCursor === this.cursor) return;
    this.cursor = page.nextCursor;
    await this.onCursor?.(this.cursor);
  }

  /** Waits; false when the signal aborted meanwhile. */
  private async pause(ms: number): Promise<boolean> {
    try {
      await sleep(ms, this.signal);
      return true;
    } catch (error) {
      if (this.signal?.aborted) return false;
      throw error;
    }
  }
}

export class Events {
  constructor(private readonly transport: Transport) {}

  /**
   * Every event visible now from `after` on (the whole feed without it), a page at a time:
   * `for await (const event of feed)`, storing the cursor in `onCursor` (or `feed.cursor` afterwards).
   */
  list(options: ListEventsOptions = {}): EventFeed {
    return new EventFeed(this.pageReader(options), options);
  }

  /**
   * Like `list`, but keeps polling for new events until `signal` aborts. The feed shows an event once
   * every older writing transaction on the gateway's database has ended, so a new event can take a
   * moment to appear; it is then yielded once, in order.
   */
  follow(options: FollowEventsOptions = {}): EventFeed {
    const polling = { minIntervalMs: options.minIntervalMs ?? 500, maxIntervalMs: options.maxIntervalMs ?? 10_000, onError: options.onError };
    return new EventFeed(this.pageReader(options), options, polling);
  }

  private pageReader(options: ListEventsOptions): ReadPage {
    const { limit, timeoutMs, retry } = options;
    return async (after, signal) => {
      const { data } = await this.transport.send(
        { method: 'GET', path: '/api/v1/events' },
        (attemptSignal) => this.transport.api.GET('/api/v1/events', { params: { query: { after, limit } }, signal: attemptSignal }),
        { timeoutMs, retry, signal },
      );
      return data;
    };
  }
}

import { Client } from 'pg';
import { listenerConfig } from './connection-options.js';

const RECONNECT_DELAY_MS = 2000;

/**
 * A connection of its own, outside the pool, for LISTEN: `onNotification` for each notification of
 * `channel`, `onConnected` each time it is (re)connected, when notifications may have been missed. It
 * reconnects after a failure, which `onFailure` hears of.
 */
export class Listener {
  private client: Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly onNotification: (payload: string | undefined) => void,
    private readonly onConnected: () => void,
    private readonly onFailure: (error: unknown) => void,
  ) {
    if (!/^[a-z_]+$/.test(channel)) throw new Error(`"${channel}" is not a channel name`);
    void this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new Client(listenerConfig(this.url));
    const lost = (error?: unknown) => {
      if (this.client !== client) return;
      this.client = null;
      if (error) this.onFailure(error);
      client.end().catch(() => undefined);
      this.timer = setTimeout(() => void this.connect(), RECONNECT_DELAY_MS);
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', ({ channel, payload }) => channel === this.channel && this.onNotification(payload));
    this.client = client;
    try {
      await client.connect();
      // The channel name is checked above: LISTEN takes no parameters.
      await client.query(`LISTEN ${this.channel}`);
      this.onConnected();
    } catch (error) {
      lost(error);
    }
  }
}

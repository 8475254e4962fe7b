import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Client } from 'pg';
import { ConnectionGate } from '../database/connection-gate.js';
import { clientConfig } from '../database/connection-options.js';
import { DATABASE_URL } from '../database/database.module.js';

const PROBE_TIMEOUT_MS = 2000;

/**
 * Readiness asks PostgreSQL on a connection of its own, outside the request pool: a pool drained by
 * requests waiting on a stuck peer's lock must not make a healthy instance look down (and be taken out
 * of a load balancer along with every other instance). One connection, kept open, opened again after
 * a failure; concurrent checks share one round trip. While the database does not answer, the connection
 * gate says so without a connection attempt of the probe's own, and a failed one closes the gate.
 */
@Injectable()
export class DatabaseProbe implements OnModuleDestroy {
  private client: Client | null = null;
  private inFlight: Promise<void> | null = null;
  constructor(
    @Inject(DATABASE_URL) private readonly url: string,
    private readonly gate: ConnectionGate,
  ) {}

  /** Resolves when PostgreSQL answers; rejects with the driver's error otherwise. */
  ping(): Promise<void> {
    this.inFlight ??= this.roundTrip().finally(() => {
      this.inFlight = null;
    });
    return this.inFlight;
  }

  private async roundTrip(): Promise<void> {
    const refusal = this.gate.refusal();
    if (refusal) throw refusal;
    try {
      if (!this.client) {
        this.client = await this.connect().catch((error: unknown) => {
          this.gate.connectFailed(error);
          throw error;
        });
      }
      await this.client.query('SELECT 1');
    } catch (error) {
      await this.discard();
      throw error;
    }
  }

  private async connect(): Promise<Client> {
    // The settings every connection of the gateway has (TCP keepalive among them), with the probe's own limits.
    const client = new Client({
      ...clientConfig({ url: this.url, poolSize: 1, lifetimeSeconds: 0, applicationName: 'tax-document-gateway-health' }),
      connectionTimeoutMillis: PROBE_TIMEOUT_MS,
      query_timeout: PROBE_TIMEOUT_MS,
    });
    // A lost connection surfaces here between checks; the next check opens a new one.
    client.on('error', () => void this.discard());
    await client.connect();
    return client;
  }

  private async discard(): Promise<void> {
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  async onModuleDestroy(): Promise<void> {
    await this.discard();
  }
}

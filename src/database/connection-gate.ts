import { Logger, OnModuleDestroy } from '@nestjs/common';
import { Client, ClientConfig, Pool, PoolClient } from 'pg';
import { databaseFailureOf, DatabaseUnavailable, describeFailure } from '../common/database-failure.js';
import { sameSocket } from './sent-together.js';

/** The first wait between two attempts to reach a database that did not answer, doubled up to the next. */
const FIRST_RETRY_MS = 100;
/** The longest wait between two attempts: a database that answers again is seen within this of doing so. */
const LONGEST_RETRY_MS = 1000;
/** How much earlier than its connect timeout a timer may fire (timers are only ever late; this is rounding). */
const CONNECT_TIMER_SLACK_MS = 50;
/** How long one attempt waits for the database before it is given up and, after the wait, made again. */
const ATTEMPT_TIMEOUT_MS = 10_000;

type ConnectCallback = (error: Error | undefined, client: PoolClient | undefined, release: (error?: unknown) => void) => void;

/**
 * `client` as its borrower is to see it, and what it met: a write refused because the server is read-only
 * (SQLSTATE 25006) means the server behind the address is no longer the primary. The connection is then
 * given back as failed, so the pool closes it instead of handing it out again: the next one is opened to
 * whatever the address now leads to.
 */
function watchReadOnly(client: PoolClient): { client: PoolClient; refusal: () => Error | undefined } {
  let refusal: Error | undefined;
  const note = (error: unknown) => {
    if (databaseFailureOf(error) === 'read_only') refusal = error as Error;
  };
  const query = (...args: unknown[]): unknown => {
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (error: unknown, ...rest: unknown[]) => {
        if (error) note(error);
        return (callback as (...a: unknown[]) => unknown)(error, ...rest);
      };
    }
    const result: unknown = (client.query as (...a: unknown[]) => unknown)(...args);
    if (result instanceof Promise) result.catch(note);
    return result;
  };
  return { client: withMember(client, 'query', query), refusal: () => refusal };
}

/** `target` with one member replaced by `value`; every other member is the target's own, its methods bound to it. */
function withMember<T extends object>(target: T, name: keyof T, value: unknown): T {
  return new Proxy(target, {
    get(object, property) {
      if (property === name) return value;
      const member: unknown = Reflect.get(object, property, object);
      return typeof member === 'function' ? (member as (...args: unknown[]) => unknown).bind(object) : member;
    },
  });
}

/**
 * Why a request was refused at the shut gate: no attempt of its own, so its log line says that rather than
 * repeat the driver's words of the attempt that shut the gate (logged once, when it shut; kept as `cause`).
 */
export class GateShut extends Error {
  constructor(shutBy: unknown, since: number) {
    super(`gate shut after a failed connection attempt ${((Date.now() - since) / 1000).toFixed(1)} s ago, no attempt made`, { cause: shutBy });
    this.name = 'ConnectionGateShut';
  }
}

/**
 * Connection attempts while the database does not answer are capped: once opening a connection has failed,
 * the request pool opens no more, and callers get a 503 ("unreachable") at once, until one attempt at a
 * time, backing off, reaches the database again. Without it every waiting request made the pool open a
 * connection and abandon it at its timeout; a frozen PostgreSQL then found all of them in its listen
 * backlog on resuming and started a backend for each before any live work (docs/operations.md,
 * "When PostgreSQL stops answering").
 *
 * The attempt is left waiting rather than abandoned early: a frozen server that resumes answers it first.
 */
export class ConnectionGate implements OnModuleDestroy {
  private readonly logger = new Logger('Database');
  /** Set while the database does not answer: the failure that closed the gate, and when. */
  private closed: { error: unknown; since: number } | null = null;
  /** The pool's connections that were opened: one that ends without being in here never was. */
  private readonly connected = new WeakSet<Client | PoolClient>();
  private retryTimer: NodeJS.Timeout | null = null;
  /** The attempt under way, a connection of its own; ended at shutdown. */
  private attemptClient: Client | null = null;
  private stopped = false;

  /** `connection`: the settings of the connection each attempt opens (the request pool's). */
  constructor(private readonly connection: ClientConfig) {}

  /** Whether new connections may be opened now. */
  get open(): boolean {
    return this.closed === null;
  }

  /** What a caller gets instead of a connection while the gate is closed; null while it is open. */
  refusal(): DatabaseUnavailable | null {
    return this.closed ? new DatabaseUnavailable('unreachable', new GateShut(this.closed.error, this.closed.since)) : null;
  }

  /**
   * Hears of a failed attempt to connect (the pool's or the readiness probe's): one that means the database
   * does not answer closes the gate. A pool that has no free connection in time ("saturated") says nothing
   * of the database, nor does a refused password.
   */
  connectFailed(error: unknown, failure = databaseFailureOf(error)): void {
    if (this.closed || this.stopped || failure === null || failure === 'saturated') return;
    this.closed = { error, since: Date.now() };
    this.logger.warn(
      { ...describeFailure(error), cause: failure },
      'The database did not accept a connection; opening no more until one attempt at a time reaches it',
    );
    this.retry(FIRST_RETRY_MS);
  }

  /**
   * pg's Client as the pool is to construct it (pg-pool's documented `Client` option): each connection the
   * pool opens is watched, and one that ends before the pool could use it is a failed attempt. pg-pool
   * tells a failed attempt to the request it was made for only while that request still waits, and opens
   * the next one for the next waiting request: without this the gate would not hear of those.
   */
  watchedClient(): typeof Client {
    // Only an attempt given up at the connect timeout says the database did not answer: one that ended sooner
    // was refused (a wrong password, too many clients) or could not reach the host, and pg-pool tells those to
    // the request, which is still waiting then.
    const givenUpAfterMs = (this.connection.connectionTimeoutMillis ?? Infinity) - CONNECT_TIMER_SLACK_MS;
    return new Proxy(Client, {
      construct: (target, args, newTarget) => {
        const client = Reflect.construct(target, args, newTarget) as Client;
        const startedAt = performance.now();
        client.once('end', () => {
          if (this.connected.has(client) || performance.now() - startedAt < givenUpAfterMs) return;
          this.connectFailed(new Error('A new connection was given up: the database did not answer in time'), 'unreachable');
        });
        return client;
      },
    });
  }

  /** `pool` as TypeORM is to see it: its `connect` goes through the gate, everything else is the pool's own. */
  guard(pool: Pool): Pool {
    pool.on('connect', (client) => this.connected.add(client));
    const connect = (callback?: ConnectCallback): Promise<PoolClient> | undefined => {
      if (!callback) {
        return new Promise((resolve, reject) => void connect((error, client) => (error ? reject(error) : resolve(client!))));
      }
      const refusal = this.refusal();
      if (refusal) {
        process.nextTick(callback, refusal, undefined, () => undefined);
        return undefined;
      }
      pool.connect((error, client, release) => {
        if (error) this.connectFailed(error);
        if (!client) return callback(error, client, release);
        const watched = watchReadOnly(client);
        sameSocket(watched.client, client);
        callback(error, watched.client, (releaseError?: unknown) => release(releaseError ?? watched.refusal()));
      });
      return undefined;
    };
    return withMember(pool, 'connect', connect);
  }

  /** Stops trying to reach the database, at shutdown. */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.attemptClient?.end().catch(() => undefined);
  }

  private retry(delayMs: number): void {
    this.retryTimer = setTimeout(() => void this.attempt(delayMs), delayMs);
    this.retryTimer.unref();
  }

  private async attempt(lastDelayMs: number): Promise<void> {
    if (this.stopped || !this.closed) return;
    try {
      await this.reach();
    } catch (error) {
      if (this.stopped) return;
      // Any other refusal (a password no longer accepted, say) is an answer: the requests get it themselves.
      if (databaseFailureOf(error) !== null) {
        if (this.closed) this.closed.error = error;
        this.retry(Math.min(lastDelayMs * 2, LONGEST_RETRY_MS));
        return;
      }
    }
    const seconds = this.closed ? ((Date.now() - this.closed.since) / 1000).toFixed(1) : '0';
    this.closed = null;
    this.logger.log(`The database accepts connections again, after ${seconds} s`);
  }

  /** Opens a connection and closes it: the server answered, authenticated and started a session. */
  private async reach(): Promise<void> {
    const client = new Client({ ...this.connection, connectionTimeoutMillis: ATTEMPT_TIMEOUT_MS });
    client.on('error', () => undefined);
    this.attemptClient = client;
    try {
      await client.connect();
    } finally {
      this.attemptClient = null;
      await client.end().catch(() => undefined);
    }
  }
}

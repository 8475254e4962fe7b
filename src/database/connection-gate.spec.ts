import { EventEmitter } from 'node:events';
import { createServer } from 'node:net';
import type { Pool } from 'pg';
import { DatabaseUnavailable, describeFailure } from '../common/database-failure.js';
import { ConnectionGate, GateShut } from './connection-gate.js';

/** A port on loopback where nothing listens: every connection attempt is refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Enough of a pg pool for the gate: `connect` answers as told and counts its calls. */
function fakePool(answer: () => Error | undefined) {
  const pool = Object.assign(new EventEmitter(), {
    calls: 0,
    totalCount: 3,
    connect(callback: (error: Error | undefined, client: unknown, release: () => void) => void) {
      pool.calls += 1;
      const error = answer();
      callback(error, error ? undefined : {}, () => undefined);
    },
  });
  return pool;
}

describe('ConnectionGate', () => {
  let gate: ConnectionGate;
  beforeEach(async () => {
    gate = new ConnectionGate({ host: '127.0.0.1', port: await closedPort(), user: 'nobody', database: 'nothing' });
  });
  afterEach(() => gate.onModuleDestroy());

  it('closes on a failed attempt that means the database does not answer, not on a saturated pool or a refused password', () => {
    gate.connectFailed(new Error('timeout exceeded when trying to connect'));
    gate.connectFailed(Object.assign(new Error('password authentication failed for user "x"'), { code: '28P01' }));
    expect(gate.open).toBe(true);
    expect(gate.refusal()).toBeNull();
    const cause = new Error('Connection terminated due to connection timeout');
    gate.connectFailed(cause);
    expect(gate.open).toBe(false);
    const refusal = gate.refusal();
    expect(refusal).toBeInstanceOf(DatabaseUnavailable);
    expect(refusal).toMatchObject({ failure: 'unreachable', cause: { cause } });
    // What the request's log line says: no attempt of its own, not the words of the attempt that shut the gate.
    expect(refusal!.cause).toBeInstanceOf(GateShut);
    const logged = describeFailure(refusal!.cause);
    expect(logged).toEqual({
      cause: 'ConnectionGateShut',
      message: expect.stringMatching(/^gate shut after a failed connection attempt \d+\.\d s ago, no attempt made$/),
    });
    expect(refusal!.code).toBeUndefined();
  });

  it('hands connections through while open, and refuses without asking the pool while closed', async () => {
    let fail = false;
    const pool = fakePool(() => (fail ? Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }) : undefined));
    const guarded = gate.guard(pool as unknown as Pool);
    await expect(guarded.connect()).resolves.toEqual({});
    expect(guarded.totalCount).toBe(3);
    fail = true;
    await expect(guarded.connect()).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(gate.open).toBe(false);
    const calls = pool.calls;
    await expect(guarded.connect()).rejects.toBeInstanceOf(DatabaseUnavailable);
    await expect(guarded.connect()).rejects.toMatchObject({ failure: 'unreachable' });
    expect(pool.calls).toBe(calls);
  });

  it('hears of a connection the pool opened and gave up unanswered at its connect timeout', async () => {
    // A server that accepts the connection and never answers, as a frozen PostgreSQL does.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const config = {
        host: '127.0.0.1',
        port: (silent.address() as { port: number }).port,
        user: 'nobody',
        database: 'nothing',
        connectionTimeoutMillis: 300,
      };
      const watching = new ConnectionGate(config);
      const client = new (watching.watchedClient())(config);
      const ended = new Promise((resolve) => client.once('end', resolve));
      await expect(client.connect()).rejects.toThrow();
      await ended;
      expect(watching.open).toBe(false);
      expect(watching.refusal()?.cause).toMatchObject({ cause: { message: 'A new connection was given up: the database did not answer in time' } });
      await watching.onModuleDestroy();
    } finally {
      silent.close();
    }
  });

  it('stays open for a connection refused at once (no server, a password refused): the request hears of that itself', async () => {
    const config = { host: '127.0.0.1', port: await closedPort(), user: 'nobody', database: 'nothing', connectionTimeoutMillis: 3000 };
    const watching = new ConnectionGate(config);
    const client = new (watching.watchedClient())(config);
    const ended = new Promise((resolve) => client.once('end', resolve));
    await expect(client.connect()).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await ended;
    expect(watching.open).toBe(true);
    await watching.onModuleDestroy();
  });
});

import { createServer, Server, Socket } from 'node:net';
import { Redis } from 'ioredis';
import { SHARED_STORE_TIMEOUT_MS, WARM_UP_CHECKS } from '../../src/auth/key-rate-limiter.js';
import { newSourceWithKey } from '../support/factories.js';
import { waitFor } from '../support/processes.js';
import { startTestApp, TestApp } from '../support/test-app.js';

const REDIS = { host: '127.0.0.1', port: Number(process.env.TEST_REDIS_PORT ?? 6379) };

/**
 * A TCP proxy in front of Redis that can stop passing anything on (a Redis that hangs) and start again, or
 * hold Redis's answers back for `delayMs` each (a Redis behind a busy network or event loop).
 */
async function pausableProxy(): Promise<{ url: string; pause(): void; resume(): void; delay(ms: number): void; close(): Promise<void> }> {
  let paused = false;
  let delayMs = 0;
  const pairs = new Set<[Socket, Socket]>();
  const held: Array<() => void> = [];
  const server: Server = createServer((client) => {
    const upstream = new Socket().connect(REDIS.port, REDIS.host);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    for (const [from, to] of [pair, [upstream, client] as [Socket, Socket]]) {
      from.on('data', (chunk) => {
        if (!paused && delayMs && from === upstream) return void setTimeout(() => to.write(chunk), delayMs);
        if (!paused) return void to.write(chunk);
        held.push(() => to.write(chunk));
        from.pause();
      });
      from.on('error', () => to.destroy());
      from.on('close', () => {
        to.destroy();
        pairs.delete(pair);
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `redis://127.0.0.1:${port}`,
    pause: () => (paused = true),
    delay: (ms) => (delayMs = ms),
    resume: () => {
      paused = false;
      // What arrived while paused was held back, not lost: let it through now, in order.
      for (const write of held.splice(0)) write();
      for (const [client, upstream] of pairs) for (const socket of [client, upstream]) socket.resume();
    },
    close: async () => {
      for (const [client, upstream] of pairs) for (const socket of [client, upstream]) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Waits until a check of `key` has reached Redis: the instance's connection is up and used. */
async function checkedInRedis(t: TestApp, key: { key: string; id: string }, redis: Redis): Promise<void> {
  await waitFor(async () => (await me(t, key.key)).statusCode === 200 && (await redis.exists(`tdg:rate:${key.id}`)) === 1, 'a check that reached Redis');
}

const me = (t: TestApp, key: string) => t.app.inject({ method: 'GET', url: '/api/v1/me', headers: { 'x-api-key': key } });
const storeUp = async (t: TestApp) => /^rate_limit_shared_store_up (\d)$/m.exec((await t.app.inject({ method: 'GET', url: '/metrics' })).body)?.[1];

describe('the per-key rate limit shared through Redis', () => {
  it('lets two instances together allow what one would, and tells every answer its budget', async () => {
    const env = { REDIS_URL: `redis://${REDIS.host}:${REDIS.port}`, RATE_LIMIT_PER_MINUTE: '10' };
    const one = await startTestApp({ env });
    const two = await startTestApp({ env, databaseUrl: one.databaseUrl });
    try {
      // A check sent before an instance's Redis connection is up counts locally until its probe finds Redis;
      // the counted burst starts once both instances have reached Redis.
      const warmUp = await newSourceWithKey(one.app);
      for (const instance of [one, two]) {
        await me(instance, warmUp.key);
        await waitFor(async () => (await storeUp(instance)) === '1', 'the instance to reach Redis');
      }
      const { key } = await newSourceWithKey(one.app);
      const answers = [];
      for (let i = 0; i < 16; i += 1) answers.push(await me(i % 2 ? two : one, key));
      expect(answers.map((res) => res.statusCode)).toEqual([...Array(10).fill(200), ...Array(6).fill(429)]);
      expect(answers[0].headers['ratelimit-policy']).toBe('"per-key";q=10;w=60');
      expect(answers[0].headers.ratelimit).toBe('"per-key";r=9;t=6');
      expect(answers[9].headers.ratelimit).toBe('"per-key";r=0;t=60');
      expect(answers[10].headers).toMatchObject({ 'retry-after': '6', ratelimit: '"per-key";r=0;t=60', 'ratelimit-policy': '"per-key";q=10;w=60' });
      expect(await storeUp(one)).toBe('1');
      expect(await storeUp(two)).toBe('1');
    } finally {
      await two.close();
      await one.close();
    }
  });

  it("falls back to the instance's own counters at once while Redis hangs, says so once, and shares again once it answers", async () => {
    const proxy = await pausableProxy();
    const t = await startTestApp({ env: { REDIS_URL: proxy.url, RATE_LIMIT_PER_MINUTE: '1000' } });
    try {
      const { key } = await newSourceWithKey(t.app);
      // Past the warm-up, whose slow checks do not count (the test below).
      for (let i = 0; i < WARM_UP_CHECKS; i += 1) expect((await me(t, key)).statusCode).toBe(200);
      proxy.pause();
      // Every one answered while Redis still hangs (it is resumed only below): none waited for Redis.
      const during = await Promise.all(Array.from({ length: 20 }, () => me(t, key)));
      expect(during.map((res) => res.statusCode)).toEqual(Array(20).fill(200));
      expect(during.every((res) => /^"per-key";r=\d+;t=\d+$/.test(String(res.headers.ratelimit)))).toBe(true);
      expect(await storeUp(t)).toBe('0');
      const warnings = t
        .logs()
        .split('\n')
        .filter((line) => line.includes('shared rate-limit store does not answer'));
      expect(warnings).toHaveLength(1);
      // What cut the wait short is the store's own time limit on a call (what failed, not the class of the
      // error: ioredis throws plain Errors), not a connection lost or refused.
      expect(JSON.parse(warnings[0])).toMatchObject({ level: 40, cause: 'Command timed out', message: 'Command timed out' });

      proxy.resume();
      await waitFor(async () => (await storeUp(t)) === '1', 'the shared store back');
      expect((await me(t, key)).statusCode).toBe(200);
    } finally {
      await t.close();
      await proxy.close();
    }
  });

  it('does not count a healthy Redis down for a slow check during the warm-up after connecting, or for one slower than 50 ms but within its limit', async () => {
    const proxy = await pausableProxy();
    const redis = new Redis(REDIS);
    const t = await startTestApp({ env: { REDIS_URL: proxy.url, RATE_LIMIT_PER_MINUTE: '1000' } });
    try {
      const key = await newSourceWithKey(t.app);
      await checkedInRedis(t, key, redis);
      // A check that times out while the connection is still warm: answered from the instance's own counters,
      // without counting the store down, and the next check is shared again.
      proxy.pause();
      expect((await me(t, key.key)).statusCode).toBe(200);
      proxy.resume();
      expect(await storeUp(t)).toBe('1');
      expect(t.logs()).not.toContain('shared rate-limit store does not answer');

      // Warm, answers held back well over the old 50 ms but within the limit are still shared: Redis counts
      // each of them (its stored arrival time moves on by one interval per check).
      for (let i = 0; i < WARM_UP_CHECKS; i += 1) await me(t, key.key);
      proxy.delay(150);
      expect(SHARED_STORE_TIMEOUT_MS).toBeGreaterThan(2 * 150);
      const before = Number(await redis.get(`tdg:rate:${key.id}`));
      const slow = [];
      for (let i = 0; i < 3; i += 1) slow.push(await me(t, key.key));
      expect(slow.map((res) => res.statusCode)).toEqual([200, 200, 200]);
      expect(Number(await redis.get(`tdg:rate:${key.id}`))).toBeGreaterThanOrEqual(before + 2 * 60_000);
      expect(await storeUp(t)).toBe('1');
      expect(t.logs()).not.toContain('shared rate-limit store does not answer');
    } finally {
      await t.close();
      await proxy.close();
      redis.disconnect();
    }
  });

  it('serves every request with its own counters when nobody answers at REDIS_URL, and never a 5xx', async () => {
    const t = await startTestApp({ env: { REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      const { key } = await newSourceWithKey(t.app);
      const answers = await Promise.all(Array.from({ length: 5 }, () => me(t, key)));
      expect(answers.map((res) => res.statusCode).sort()).toEqual([200, 200, 200, 429, 429]);
      expect(await storeUp(t)).toBe('0');
    } finally {
      await t.close();
    }
  });
});

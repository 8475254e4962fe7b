import { Redis } from 'ioredis';
import { RateDecision, quota, WINDOW_MS } from './gcra.js';

/**
 * gcraDecision in Redis, as one atomic script: KEYS[1] the key's theoretical arrival time (µs since the
 * epoch, Redis's clock), ARGV[1] the interval between requests (µs), ARGV[2] the limit. Answers
 * {allowed, µs until the next request fits, the arrival time after it − now}; the key expires once its
 * budget is whole again.
 */
const GCRA_SCRIPT = `
local interval = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local now = redis.call('TIME')
local nowUs = now[1] * 1000000 + now[2]
local tat = tonumber(redis.call('GET', KEYS[1]) or nowUs)
if tat < nowUs then tat = nowUs end
local nextTat = tat + interval
local allowedAt = nextTat - limit * interval
if allowedAt > nowUs then return {0, allowedAt - nowUs, tat - nowUs} end
redis.call('SET', KEYS[1], nextTat, 'PX', math.ceil((nextTat - nowUs) / 1000))
return {1, 0, nextTat - nowUs}`;

const CONNECT_TIMEOUT_MS = 2000;

type GcraRedis = Redis & { gcra(key: string, intervalUs: number, limit: number): Promise<[number, number, number]> };

/**
 * The per-key limit shared by every instance through one Redis or Valkey (REDIS_URL): one round trip per
 * check. A call that fails, or takes longer than `timeoutMs`, rejects at once (no offline queue, no retry):
 * the caller falls back to its own counters rather than hold the request up.
 */
export class SharedRateLimit {
  private readonly redis: GcraRedis;
  /** Until the first connection is made or fails. */
  private firstConnection = true;
  private checksSinceReady = 0;

  constructor(url: string, timeoutMs: number) {
    this.redis = new Redis(url, {
      commandTimeout: timeoutMs,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: CONNECT_TIMEOUT_MS,
      // Reconnect forever, at most every 2 s: the limit returns to Redis as soon as it answers again.
      retryStrategy: (times) => Math.min(times * 200, 2000),
      keyPrefix: 'tdg:rate:',
      connectionName: 'tax-document-gateway',
    }) as GcraRedis;
    this.redis.defineCommand('gcra', { numberOfKeys: 1, lua: GCRA_SCRIPT });
    // Connection errors surface as failed calls; an unlistened 'error' event would end the process.
    this.redis.on('error', () => undefined);
    this.redis.on('ready', () => {
      this.firstConnection = false;
      this.checksSinceReady = 0;
    });
    this.redis.on('close', () => (this.firstConnection = false));
    // A first connection that neither succeeds nor fails (a Redis that accepts and never answers) is over too.
    setTimeout(() => (this.firstConnection = false), CONNECT_TIMEOUT_MS).unref();
  }

  /**
   * True while the connection is not yet warm: still making its first connection, or among the first
   * `checks` checks since it (re)connected. A slow or refused check then says nothing about the store (the
   * script is loaded and the code paths compiled on first use), so it counts as a miss, not as the store down.
   */
  warmingUp(checks: number): boolean {
    return this.redis.status === 'ready' ? this.checksSinceReady < checks : this.firstConnection;
  }

  async take(key: string, limit: number): Promise<RateDecision> {
    this.checksSinceReady += 1;
    const intervalUs = Math.floor((WINDOW_MS * 1000) / limit);
    const [allowed, retryAfterUs, usedUs] = await this.redis.gcra(key, intervalUs, limit);
    const left = quota(usedUs / 1000, 0, limit);
    return allowed === 1 ? { allowed: true, ...left } : { allowed: false, ...left, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterUs / 1_000_000)) };
  }

  /** Resolves once the connection can take commands (at once when it already can). */
  ready(): Promise<void> {
    if (this.redis.status === 'ready') return Promise.resolve();
    return new Promise((resolve) => this.redis.once('ready', () => resolve()));
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

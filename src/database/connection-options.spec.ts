import { clientConfig, KEEPALIVE_INITIAL_DELAY_MS, listenerConfig, poolConfig } from './connection-options.js';

describe('connection options', () => {
  const settings = { url: 'postgres://u@127.0.0.1:5432/d', poolSize: 4, lifetimeSeconds: 600, timeouts: { statementMs: 5000, lockMs: 2000 } };

  it('turn TCP keepalive on for the pool, the LISTEN connection and every other client, so a dead peer is noticed while idle', () => {
    for (const config of [clientConfig(settings), poolConfig(settings), listenerConfig(settings.url)]) {
      expect(config.keepAlive).toBe(true);
      expect(config.keepAliveInitialDelayMillis).toBe(KEEPALIVE_INITIAL_DELAY_MS);
    }
  });
});

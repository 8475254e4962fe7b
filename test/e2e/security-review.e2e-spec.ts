import { connect, Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { adminHeaders, newIdempotencyKey, newSourceWithKey } from '../support/factories.js';
import { earlyInAMinute, waitFor } from '../support/processes.js';
import { startTestApp, TestApp, TEST_ADMIN_TOKEN } from '../support/test-app.js';

/** Findings of the outside security review (issue 31), each checked through HTTP. */
describe('security review findings', () => {
  describe('one client holding connections', () => {
    let t: TestApp;
    let port: number;
    const sockets: Socket[] = [];
    /** A socket from `address` that sends half a request and keeps its connection open. */
    const holder = (address: string) =>
      new Promise<Socket>((resolve, reject) => {
        const socket = connect({ port, host: '127.0.0.1', localAddress: address }, () => {
          socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n');
          resolve(socket);
        });
        socket.on('error', reject);
        sockets.push(socket);
      });
    const closedAt = (socket: Socket) => new Promise<boolean>((resolve) => (socket.destroyed ? resolve(true) : socket.once('close', () => resolve(true))));
    const live = (address: string) =>
      new Promise<number>((resolve, reject) => {
        const socket = connect({ port, host: '127.0.0.1', localAddress: address }, () =>
          socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
        );
        let answer = '';
        socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
        socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)));
        socket.on('error', reject);
      });

    beforeAll(async () => {
      t = await startTestApp({ env: { HTTP_MAX_CONNECTIONS_PER_CLIENT: '5' } });
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.getHttpServer().address() as AddressInfo).port;
    });
    afterAll(async () => {
      for (const socket of sockets) socket.destroy();
      await t.close();
    });

    it('closes connections beyond HTTP_MAX_CONNECTIONS_PER_CLIENT from one address, and serves every other address', async () => {
      for (let i = 0; i < 5; i += 1) await holder('127.0.0.1');
      const sixth = await holder('127.0.0.1');
      expect(await closedAt(sixth)).toBe(true);
      expect(await live('127.0.0.2')).toBe(200);
      // Once the held connections are gone, the address is served again.
      for (const socket of sockets.splice(0)) socket.destroy();
      await waitFor(async () => (await live('127.0.0.1')) === 200, 'the address served again');
    });
  });

  describe('addresses behind a trusted proxy (TRUSTED_PROXIES)', () => {
    let t: TestApp;
    beforeAll(async () => (t = await startTestApp({ env: { TRUSTED_PROXIES: '10.0.0.0/8' } })));
    afterAll(() => t.close());

    const issue = (remoteAddress: string, forwardedFor: string) =>
      t.app.inject({
        method: 'POST',
        url: '/admin/api-keys',
        remoteAddress,
        headers: { ...adminHeaders, 'x-forwarded-for': forwardedFor },
        payload: { source: 'proxy-test' },
      });
    const latestAudit = async () => (await t.app.inject({ method: 'GET', url: '/admin/audit-log?limit=1', headers: adminHeaders })).json().data[0];

    it('records the client named by a trusted proxy, and ignores the header from anyone else', async () => {
      expect((await issue('10.0.0.5', '198.51.100.1, 203.0.113.7, 10.0.0.9')).statusCode).toBe(201);
      // The rightmost address that is not itself a trusted proxy.
      expect((await latestAudit()).remoteAddress).toBe('203.0.113.7');
      expect((await issue('198.51.100.9', '203.0.113.8')).statusCode).toBe(201);
      expect((await latestAudit()).remoteAddress).toBe('198.51.100.9');
    });

    it('locks out the address that guessed, not the proxy every administrator comes through', async () => {
      const guess = (client: string) =>
        t.app.inject({
          method: 'GET',
          url: '/admin/api-keys',
          remoteAddress: '10.0.0.5',
          headers: { authorization: 'Bearer wrong-token-000000', 'x-forwarded-for': client },
        });
      await earlyInAMinute();
      for (let i = 0; i < 11; i += 1) await guess('203.0.113.66');
      expect((await guess('203.0.113.66')).statusCode).toBe(429);
      const other = await t.app.inject({
        method: 'GET',
        url: '/admin/api-keys',
        remoteAddress: '10.0.0.5',
        headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'x-forwarded-for': '203.0.113.67' },
      });
      expect(other.statusCode).toBe(200);
    });
  });

  describe('push endpoint URLs', () => {
    let t: TestApp;
    beforeAll(async () => (t = await startTestApp()));
    afterAll(() => t.close());
    const register = async (key: string, url: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/webhook-endpoints',
        headers: { 'x-api-key': key, 'x-idempotency-key': newIdempotencyKey() },
        payload: { url },
      });

    it('refuses IPv4-compatible IPv6 and well-known ports, and stores the URL as it is called', async () => {
      const { key } = await newSourceWithKey(t.app);
      for (const url of ['https://[::127.0.0.1]/h', 'https://[::7f00:1]/h', 'https://[::a00:1]/h']) {
        const res = await register(key, url);
        expect([url, res.statusCode, res.json().errors[0].message]).toEqual([url, 422, expect.stringMatching(/^must not point to a loopback, private/)]);
      }
      expect((await register(key, 'https://93.184.215.14:22/h')).json().errors).toEqual([
        { field: 'url', message: 'must use port 443 or a port from 1024 up' },
      ]);
      const tricky = await register(key, 'https://93.184.215.14\\@127.0.0.1/');
      expect(tricky.statusCode).toBe(201);
      expect(tricky.json().url).toBe('https://93.184.215.14/@127.0.0.1/');
      expect((await register(key, 'https://93.184.215.14:8443/h')).statusCode).toBe(201);
    });

    it('warns at start when OUTBOUND_WEBHOOKS_ALLOW_PRIVATE is true, and only then', async () => {
      const open = await startTestApp({ databaseUrl: t.databaseUrl, env: { OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
      try {
        expect(open.logs()).toMatch(/"level":40[^\n]*OUTBOUND_WEBHOOKS_ALLOW_PRIVATE is true[^\n]*for local trials only/);
      } finally {
        await open.close();
      }
      expect(t.logs()).not.toContain('OUTBOUND_WEBHOOKS_ALLOW_PRIVATE');
    });

    it('warns once at start when PUBLIC_URL is unset and the gateway listens on a non-loopback address, and only then', async () => {
      const WARNING = /"level":40[^\n]*PUBLIC_URL is not set and the gateway listens on 0\.0\.0\.0: [^\n]*Host header[^\n]*required behind a proxy/;
      // Built, never listening: the address is only read from the configuration.
      for (const [env, warns] of [
        [{ HOST: '0.0.0.0' }, true],
        [{ HOST: '127.0.0.1' }, false],
        [{ HOST: '0.0.0.0', PUBLIC_URL: 'https://gateway.example.com' }, false],
      ] as const) {
        const app = await startTestApp({ databaseUrl: t.databaseUrl, env });
        try {
          expect([env, WARNING.test(app.logs()), app.logs().split('PUBLIC_URL is not set').length - 1]).toEqual([env, warns, warns ? 1 : 0]);
        } finally {
          await app.close();
        }
      }
    });

    it('warns at start when ADMIN_TOKEN is shorter than 32 characters (the lockout never refuses the right one), and only then', async () => {
      const short = await startTestApp({ databaseUrl: t.databaseUrl, env: { ADMIN_TOKEN: 'sixteen-chars-ok' } });
      try {
        expect(short.logs()).toMatch(/"level":40[^\n]*ADMIN_TOKEN has fewer than 32 characters/);
        expect(short.logs()).not.toContain('sixteen-chars-ok');
      } finally {
        await short.close();
      }
      expect(t.logs()).not.toContain('ADMIN_TOKEN has fewer');
    });
  });

  describe('logs and methods', () => {
    let t: TestApp;
    let port: number;
    beforeAll(async () => {
      t = await startTestApp();
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.getHttpServer().address() as AddressInfo).port;
    });
    afterAll(() => t.close());

    it('never writes an API key sent in the query string to the log', async () => {
      const { key } = await newSourceWithKey(t.app);
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/me?api_key=${key}&limit=5` });
      expect(res.statusCode).toBe(401);
      const line = t
        .logs()
        .split('\n')
        .find((l) => l.includes('/api/v1/me?'));
      expect(line).toContain('api_key=[redacted]&limit=5');
      expect(t.logs()).not.toContain(key);
    });

    it('writes no key or admin token found anywhere in a URL to the log, nor back in the answer', async () => {
      const { key } = await newSourceWithKey(t.app);
      const encoded = encodeURIComponent(key).replace('_', '%5F');
      const admin = encodeURIComponent(TEST_ADMIN_TOKEN);
      const urls = [
        `/nope/${key}`,
        `/api/v1/documents/${encoded}`,
        `/api/v1/me;${key}`,
        `/api/v1/me?${key}`,
        `/api/v1/me?${key}=1`,
        `/api/v1/me?x=${encoded}`,
        `/api/v1/me?api%5Fkey=${encoded}`,
        `/admin/${admin}`,
        `/admin/me?${admin}`,
        `/admin/me?q=${admin}`,
        `/admin/me;token=${admin}`,
      ];
      for (const url of urls) {
        const res = await t.app.inject({ method: 'GET', url });
        expect({ url, refused: res.statusCode >= 400 }).toEqual({ url, refused: true });
        for (const secret of [key, encoded, TEST_ADMIN_TOKEN, admin]) expect(res.body).not.toContain(secret);
      }
      // A refusal the idempotency record keeps (and replays) names the path redacted too.
      const idempotencyKey = newIdempotencyKey();
      const cancel = () =>
        t.app.inject({
          method: 'POST',
          url: `/api/v1/documents/${key}/cancel`,
          headers: { 'x-api-key': key, 'x-idempotency-key': idempotencyKey, 'content-type': 'application/json' },
          payload: '{}',
        });
      const [first, replayed] = [await cancel(), await cancel()];
      expect([first.statusCode, replayed.statusCode, replayed.headers['idempotent-replayed']]).toEqual([404, 404, 'true']);
      for (const res of [first, replayed]) expect(res.json().instance).toBe('/api/v1/documents/[redacted]/cancel');
      const logged = t.logs();
      for (const secret of [key, key.slice(7), encoded, TEST_ADMIN_TOKEN, admin]) expect(logged).not.toContain(secret);
      // Each request was logged (a 4xx is a warning), with what was not secret kept.
      expect(logged).toContain('"url":"/nope/[redacted]"');
      expect(logged).toContain('"url":"/api/v1/me?[redacted]=1"');
      expect(logged).toContain('"url":"/admin/me;token=[redacted]"');
    });

    it('answers the API and the administration with Cache-Control: no-store, success or refusal', async () => {
      const { key } = await newSourceWithKey(t.app);
      const answers = [
        await t.app.inject({ method: 'GET', url: '/api/v1/me', headers: { 'x-api-key': key } }),
        await t.app.inject({ method: 'GET', url: '/api/v1/documents?limit=1', headers: { 'x-api-key': key } }),
        await t.app.inject({ method: 'GET', url: '/api/v1/me' }),
        await t.app.inject({ method: 'GET', url: '/admin/api-keys', headers: adminHeaders }),
        await t.app.inject({ method: 'GET', url: '/admin/me', headers: adminHeaders }),
        await t.app.inject({ method: 'GET', url: '/admin/me' }),
      ];
      expect(answers.map((res) => [res.statusCode, res.headers['cache-control']])).toEqual([
        [200, 'no-store'],
        [200, 'no-store'],
        [401, 'no-store'],
        [200, 'no-store'],
        [200, 'no-store'],
        [401, 'no-store'],
      ]);
      // Public pages keep what they say of themselves.
      expect((await t.app.inject({ method: 'GET', url: '/health/live' })).headers['cache-control']).not.toBe('no-store');
    });

    it.each([
      ['PUT', '/api/v1/documents/2b0f4c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f', 'GET, HEAD'],
      ['QUERY', '/api/v1/documents/2b0f4c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f', 'GET, HEAD'],
      ['DELETE', '/api/v1/documents', 'GET, HEAD, POST'],
      ['PUT', '/api/v1/webhook-endpoints/x', 'DELETE, GET, HEAD, PATCH'],
    ])('answers %s %s with 405 and Allow: %s', async (method, url, allow) => {
      const res = await t.app.inject({ method: method as 'PUT', url });
      expect([res.statusCode, res.headers.allow, res.headers['content-type']]).toEqual([405, allow, expect.stringMatching(/^application\/problem\+json/)]);
      expect(res.json()).toMatchObject({ status: 405, code: 'METHOD_NOT_ALLOWED' });
      expect((await t.app.inject({ method: method as 'PUT', url: '/api/v1/nothing-here' })).statusCode).toBe(404);
    });

    it('does not take a client that resets its connection mid-body for a database outage', async () => {
      const { key } = await newSourceWithKey(t.app);
      await new Promise<void>((resolve) => {
        const socket = connect({ port, host: '127.0.0.1' }, () => {
          socket.write(
            `POST /api/v1/documents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-API-Key: ${key}\r\nX-Idempotency-Key: reset-mid-body\r\nContent-Length: 500\r\n\r\n{"source":`,
          );
          setTimeout(() => {
            socket.resetAndDestroy();
            setTimeout(resolve, 300);
          }, 200);
        });
      });
      expect(t.logs()).not.toContain('Database unavailable');
      expect(t.logs()).not.toMatch(/"level":50/);
    });
  });
});

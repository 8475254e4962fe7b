import { once } from 'node:events';
import { AddressInfo, connect, Socket } from 'node:net';
import { CONSOLE_CSP } from '../../src/admin/admin-console.controller.js';
import { signWebhook } from '../../src/webhooks/webhook-signature.js';
import { waitFor } from '../support/processes.js';
import { adminHeaders, documentBody, newIdempotencyKey, newSourceWithKey, postDocument, sendWebhook, signedWebhook } from '../support/factories.js';
import { startTestApp, TEST_WEBHOOK_SECRET, TestApp } from '../support/test-app.js';

const PROBLEM = /^application\/problem\+json/;

/** Whether `raw` holds a whole answer: its head and as much body as its Content-Length says. */
function answered(raw: string): boolean {
  const end = raw.indexOf('\r\n\r\n');
  const length = /\r\ncontent-length: *(\d+)/i.exec(raw.slice(0, end))?.[1];
  return end >= 0 && length !== undefined && raw.length - end - 4 >= Number(length);
}

/**
 * Sends raw bytes on a new connection and resolves with everything the server wrote until it closed.
 * `gapMs` between chunks; `afterAnswer`: the second chunk only once the first answer is complete.
 */
async function rawExchange(port: number, chunks: (string | Buffer)[], gapMs = 0, afterAnswer = false): Promise<string> {
  const socket: Socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  const closed = once(socket, 'close');
  socket.on('error', () => undefined);
  for (const [i, chunk] of chunks.entries()) {
    if (socket.destroyed) break;
    if (i === 1 && afterAnswer) await waitFor(async () => answered(received) || socket.destroyed, 'the first answer');
    socket.write(chunk);
    if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
  }
  await closed;
  return received;
}

function parseRawResponse(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const [head, ...rest] = raw.split('\r\n\r\n');
  const [statusLine, ...headerLines] = head.split('\r\n');
  const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') };
}

describe('hardening: bad input', () => {
  let t: TestApp;
  let source: { key: string; source: string; id: string };

  beforeAll(async () => {
    t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
    source = await newSourceWithKey(t.app);
  });
  afterAll(() => t.close());

  const documentCount = async () => Number((await t.db.query('SELECT count(*) FROM documents')).rows[0].count);

  describe('bodies too big or too complex for a document', () => {
    it('refuses ~110,000 unknown keys in just under 1 MiB with 413, before reading them', async () => {
      const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 110_000 }, (_, i) => [i.toString(36), 0])));
      expect(wide.length).toBeLessThan(1024 * 1024);
      const res = await postDocument(t.app, source.key, wide);
      expect(res.statusCode).toBe(413);
      expect(res.headers['content-type']).toMatch(PROBLEM);
      expect(res.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    });

    it('refuses a body within the limit but with thousands of members, naming one problem and not each key', async () => {
      const wide = JSON.stringify({ ...documentBody(source.source), ...Object.fromEntries(Array.from({ length: 6000 }, (_, i) => [`k${i}`, 1])) });
      expect(wide.length).toBeLessThan(64 * 1024);
      const before = await documentCount();
      const res = await postDocument(t.app, source.key, wide);
      expect(res.statusCode).toBe(422);
      expect(res.json().errors).toEqual([{ field: 'body', message: 'must not have more than 256 members in all' }]);
      expect(res.body.length).toBeLessThan(1000);
      expect(await documentCount()).toBe(before);
    });

    it('refuses nesting deeper than 8 levels', async () => {
      let deep: unknown = 'x';
      for (let i = 0; i < 9; i++) deep = { a: deep };
      const res = await postDocument(t.app, source.key, documentBody(source.source, { metadata: deep }));
      expect(res.statusCode).toBe(422);
      expect(res.json().errors).toEqual([{ field: 'body', message: 'must not nest objects or arrays more than 8 levels deep' }]);
    });

    it('lists at most 50 field errors', async () => {
      const body = { ...documentBody(source.source), ...Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`unknown${i}`, 1])) };
      const res = await postDocument(t.app, source.key, body);
      expect(res.statusCode).toBe(422);
      expect(res.json().errors).toHaveLength(50);
    });

    it('still authenticates first: a wide body without a key is a 401', async () => {
      const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, 1])));
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/documents', headers: { 'content-type': 'application/json' }, payload: wide });
      expect(res.statusCode).toBe(401);
    });
  });

  describe('charset and encoding', () => {
    it.each(['application/json; charset=latin1', 'application/json; charset=iso-8859-1', 'application/json;charset="utf-16"'])(
      'refuses %s with 415 and stores nothing',
      async (contentType) => {
        const before = await documentCount();
        const res = await t.app.inject({
          method: 'POST',
          url: '/api/v1/documents',
          headers: { 'x-api-key': source.key, 'x-idempotency-key': newIdempotencyKey(), 'content-type': contentType },
          payload: Buffer.from(JSON.stringify(documentBody(source.source, { taxpayer: { taxId: 'X1', name: 'Müller', country: 'DE' } })), 'latin1'),
        });
        expect(res.statusCode).toBe(415);
        expect(res.headers['content-type']).toMatch(PROBLEM);
        expect(res.json().code).toBe('UNSUPPORTED_MEDIA_TYPE');
        expect(await documentCount()).toBe(before);
      },
    );

    it.each(['deflate', 'gzip', 'br'])('refuses Content-Encoding: %s with 415', async (encoding) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/documents',
        headers: { 'x-api-key': source.key, 'x-idempotency-key': newIdempotencyKey(), 'content-type': 'application/json', 'content-encoding': encoding },
        payload: JSON.stringify(documentBody(source.source)),
      });
      expect(res.statusCode).toBe(415);
      expect(res.json().detail).toMatch(/Content-Encoding/);
    });

    it('refuses invalid UTF-8 with 422 instead of storing U+FFFD', async () => {
      const json = JSON.stringify(documentBody(source.source, { taxpayer: { taxId: 'X1', name: 'M__ller', country: 'DE' } }));
      const bytes = Buffer.from(json, 'utf8');
      const at = bytes.indexOf('__');
      bytes[at] = 0xfc; // "ü" in latin1: not UTF-8
      const before = await documentCount();
      const res = await postDocument(t.app, source.key, bytes.toString('latin1'));
      const raw = await t.app.inject({
        method: 'POST',
        url: '/api/v1/documents',
        headers: { 'x-api-key': source.key, 'x-idempotency-key': newIdempotencyKey(), 'content-type': 'application/json' },
        payload: bytes,
      });
      expect(res.statusCode).toBe(201); // sanity: the same text sent as proper UTF-8 is fine
      expect(raw.statusCode).toBe(422);
      expect(raw.json().errors).toEqual([{ field: 'body', message: 'is not valid UTF-8' }]);
      expect(await documentCount()).toBe(before + 1);
    });

    it('accepts charset=utf-8 in any case', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/documents',
        headers: { 'x-api-key': source.key, 'x-idempotency-key': newIdempotencyKey(), 'content-type': 'application/json; charset=UTF-8' },
        payload: JSON.stringify(documentBody(source.source)),
      });
      expect(res.statusCode).toBe(201);
    });
  });

  describe('router errors', () => {
    it.each([
      ['a URL that does not decode', '/api/v1/documents/%ff'],
      ['an id longer than the router allows', `/api/v1/documents/${'a'.repeat(150)}`],
    ])('answers %s with 404 problem+json that does not echo the URL', async (_name, url) => {
      const res = await t.app.inject({ method: 'GET', url, headers: { 'x-api-key': source.key } });
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toMatch(PROBLEM);
      expect(res.headers['x-request-id']).toBeTruthy();
      expect(res.json()).toMatchObject({ code: 'NOT_FOUND', requestId: res.headers['x-request-id'] });
      expect(res.body).not.toMatch(/%ff|aaaaaaaaaa/);
    });
  });

  describe('admin rotate body', () => {
    it.each(['3600', '"x"', 'true', 'null', '[]', '[3600]', '{"gracePeriodSeconds":null}', '{"gracePeriodSeconds":"60"}'])(
      'refuses %s with 422 and leaves the key as it was',
      async (payload) => {
        const victim = await newSourceWithKey(t.app);
        const res = await t.app.inject({
          method: 'POST',
          url: `/admin/api-keys/${victim.id}/rotate`,
          headers: { ...adminHeaders, 'content-type': 'application/json' },
          payload,
        });
        expect(res.statusCode).toBe(422);
        expect(res.headers['content-type']).toMatch(PROBLEM);
        const key = (await t.db.query('SELECT revoked_at FROM api_keys WHERE id = $1', [victim.id])).rows[0];
        expect(key.revoked_at).toBeNull();
        expect((await t.db.query('SELECT count(*) FROM api_keys WHERE source = $1', [victim.source])).rows[0].count).toBe('1');
      },
    );

    it('still rotates without a body, and marks answers carrying a key no-store', async () => {
      const victim = await newSourceWithKey(t.app);
      const res = await t.app.inject({ method: 'POST', url: `/admin/api-keys/${victim.id}/rotate`, headers: adminHeaders });
      expect(res.statusCode).toBe(201);
      expect(res.json().key).toMatch(/^sk_tax_/);
      expect(res.headers['cache-control']).toBe('no-store');
      const issued = await t.app.inject({ method: 'POST', url: '/admin/api-keys', headers: adminHeaders, payload: { source: 'no-store-check' } });
      expect(issued.headers['cache-control']).toBe('no-store');
    });

    it('refuses null for an optional document field', async () => {
      const res = await postDocument(t.app, source.key, documentBody(source.source, { providerReference: null }));
      expect(res.statusCode).toBe(422);
      expect(res.json().errors).toEqual([expect.objectContaining({ field: 'providerReference' })]);
    });
  });

  describe('bank webhook media type', () => {
    const body = { eventId: 'evt_media_1', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'PAY-MEDIA-1' };
    const stored = async () => Number((await t.db.query('SELECT count(*) FROM webhook_events')).rows[0].count);

    it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1'])(
      'answers a signed %s delivery with 415 and stores nothing',
      async (contentType) => {
        const delivery = signedWebhook(TEST_WEBHOOK_SECRET, body);
        delivery.headers['content-type'] = contentType;
        const before = await stored();
        const res = await sendWebhook(t.app, delivery);
        expect(res.statusCode).toBe(415);
        expect(res.json().code).toBe('UNSUPPORTED_MEDIA_TYPE');
        expect(await stored()).toBe(before);
      },
    );

    it('still answers an unsigned delivery of any type with 401', async () => {
      const res = await sendWebhook(t.app, { raw: 'garbage', headers: { 'content-type': 'text/plain' } });
      expect(res.statusCode).toBe(401);
    });

    it('answers a signed delivery that is not UTF-8 with 422', async () => {
      const raw = Buffer.concat([
        Buffer.from('{"eventId":"evt_'),
        Buffer.from([0xff]),
        Buffer.from('","eventType":"PAYMENT_STATUS","status":"PAID","providerReference":"P"}'),
      ]);
      const timestamp = new Date().toISOString();
      const headers = {
        'content-type': 'application/json',
        'x-provider-timestamp': timestamp,
        'x-provider-signature': signWebhook(TEST_WEBHOOK_SECRET, timestamp, raw),
      };
      const res = await sendWebhook(t.app, { raw, headers });
      expect(res.statusCode).toBe(422);
      expect(res.json().errors).toEqual([{ field: 'body', message: 'is not valid UTF-8' }]);
    });
  });

  describe('security headers', () => {
    it.each(['/health/live', '/docs', '/docs/openapi.json', '/no/such/route'])('are on %s', async (url) => {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['strict-transport-security']).toBeDefined();
    });

    // Only headers that mean something for data: a browser never renders a JSON answer as a page.
    const JSON_SET = [
      'content-security-policy',
      'strict-transport-security',
      'x-content-type-options',
      'x-frame-options',
      'referrer-policy',
      'cross-origin-resource-policy',
    ];
    const PAGE_ONLY = [
      'cross-origin-opener-policy',
      'origin-agent-cluster',
      'x-dns-prefetch-control',
      'x-download-options',
      'x-permitted-cross-domain-policies',
      'x-xss-protection',
    ];

    it('on JSON answers (a document, a problem, health) are the REST set, with a policy that allows nothing', async () => {
      const created = await postDocument(t.app, source.key, documentBody(source.source));
      const answers = [
        created,
        await t.app.inject({ method: 'GET', url: `/api/v1/documents/${created.json().id}`, headers: { 'x-api-key': source.key } }),
        await t.app.inject({ method: 'GET', url: '/api/v1/documents/not-a-uuid', headers: { 'x-api-key': source.key } }),
        await t.app.inject({ method: 'GET', url: '/no/such/route' }),
        await t.app.inject({ method: 'GET', url: '/health/live' }),
      ];
      for (const res of answers) {
        expect(res.headers['content-type']).toMatch(/^application\/(problem\+)?json/);
        expect(res.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
        expect(res.headers['referrer-policy']).toBe('no-referrer');
        expect(res.headers['cross-origin-resource-policy']).toBe('same-origin');
        for (const name of JSON_SET) expect(res.headers[name]).toBeDefined();
        for (const name of PAGE_ONLY) expect(res.headers[name]).toBeUndefined();
      }
    });

    it("on pages (Swagger UI, the /metrics text) are helmet's whole set with the page policy", async () => {
      for (const url of ['/docs', '/metrics']) {
        const res = await t.app.inject({ method: 'GET', url });
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).not.toMatch(/json/);
        expect(res.headers['content-security-policy']).toContain("script-src 'self'");
        expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
        for (const name of [...JSON_SET, ...PAGE_ONLY]) expect(res.headers[name]).toBeDefined();
      }
    });

    it('leave the console its own stricter policy', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/admin' });
      expect(res.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(res.headers['x-frame-options']).toBe('DENY');
      for (const name of PAGE_ONLY) expect(res.headers[name]).toBeDefined();
    });
  });
});

describe('hardening: metrics token', () => {
  let t: TestApp;
  const token = 'metrics-token-0123456789';
  beforeAll(async () => {
    t = await startTestApp({ env: { METRICS_TOKEN: token } });
  });
  afterAll(() => t.close());

  it.each([[undefined], ['Bearer wrong-token-0123456789'], [`Basic ${token}`]])('refuses %p with 401', async (authorization) => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} });
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.body).not.toContain('http_requests_total');
  });

  it.each(['Bearer', 'bearer', 'BEARER', 'bEaReR'])('serves the metrics with the token, the scheme written %s (case-insensitive, RFC 9110)', async (scheme) => {
    const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `${scheme} ${token}` } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('http_requests_total');
  });
});

describe('hardening: the HTTP layer on a real socket', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    t = await startTestApp({ env: { HTTP_REQUEST_TIMEOUT_MS: '1500', HTTP_HEADERS_TIMEOUT_MS: '1000' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.getHttpServer().address() as AddressInfo).port;
  });
  afterAll(() => t.close());

  const expectProblem = (raw: string, status: number) => {
    const res = parseRawResponse(raw);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(res.body)).toMatchObject({ status, requestId: res.headers['x-request-id'] });
    return res;
  };

  it('answers headers larger than the server accepts with 431 problem+json', async () => {
    const raw = await rawExchange(port, [`GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`]);
    expectProblem(raw, 431);
  });

  it('answers garbage pipelined behind a request whose answer has not begun with one clean 400, and goes on serving', async () => {
    const raw = await rawExchange(port, ['GET /health/live HTTP/1.1\r\nHost: x\r\n\r\nNOT HTTP AT ALL\r\n\r\n']);
    expectProblem(raw, 400);
    expect(raw.match(/HTTP\/1\.1 \d{3}/g)).toHaveLength(1);
    const after = await rawExchange(port, ['GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n']);
    expect(parseRawResponse(after).status).toBe(200);
  });

  it('answers garbage sent after a finished answer on the same connection with a clean 400 behind it', async () => {
    const raw = await rawExchange(port, ['GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n', 'NOT HTTP AT ALL\r\n\r\n'], 0, true);
    expect(raw.match(/HTTP\/1\.1 \d{3}/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 400']);
    expectProblem(raw.slice(raw.lastIndexOf('HTTP/1.1 400')), 400);
  });

  it('answers conflicting Content-Length headers with 400 problem+json', async () => {
    const raw = await rawExchange(port, [
      'POST /api/v1/documents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}',
    ]);
    const res = expectProblem(raw, 400);
    expect(res.body).not.toContain('/api/v1/documents');
  });

  it('cuts off a client that trickles its body, with 408, without any credentials', async () => {
    const head = 'POST /api/v1/documents HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n';
    // One byte every 200 ms would take over three minutes; the server must not wait for it.
    const raw = await rawExchange(port, [head, ...Array.from({ length: 1000 }, () => 'x')], 200);
    expectProblem(raw, 408);
  });

  it('cuts off a client that trickles its headers', async () => {
    const raw = await rawExchange(port, ['GET /health/live HTTP/1.1\r\n', ...Array.from({ length: 1000 }, (_, i) => `X-Slow-${i}: 1\r\n`)], 200);
    expectProblem(raw, 408);
  });
});

describe('hardening: the connection cap', () => {
  let t: TestApp;
  let port: number;

  beforeAll(async () => {
    t = await startTestApp({ env: { HTTP_MAX_CONNECTIONS: '2' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.getHttpServer().address() as AddressInfo).port;
  });
  afterAll(() => t.close());

  it('closes a connection beyond HTTP_MAX_CONNECTIONS at once, and keeps serving the ones it holds', async () => {
    const server = t.app.getHttpServer();
    const connections = () => new Promise<number>((resolve, reject) => server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
    const held = await Promise.all(
      [0, 1].map(async () => {
        const socket = connect(port, '127.0.0.1');
        await once(socket, 'connect');
        return socket;
      }),
    );
    try {
      await waitFor(async () => (await connections()) === 2, 'both connections to be accepted');
      const refused = await rawExchange(port, ['GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n']);
      expect(refused).toBe('');
      let answer = '';
      held[0].on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
      held[0].write('GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      await once(held[0], 'close');
      expect(parseRawResponse(answer).status).toBe(200);
    } finally {
      for (const socket of held) socket.destroy();
    }
  });
});

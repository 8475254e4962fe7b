import { jest } from '@jest/globals';
import { getDataSourceToken } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { randomBytes } from 'node:crypto';
import { generateOpaqueToken } from '../../src/common/opaque-token.js';
import { ConnectionGate } from '../../src/database/connection-gate.js';
import { holdDocumentInsert } from '../support/database.js';
import { documentBody, newIdempotencyKey, newSourceWithKey } from '../support/factories.js';
import { waitFor } from '../support/processes.js';
import { startTestApp, TEST_ADMIN_TOKEN, TEST_WEBHOOK_SECRET, TestApp } from '../support/test-app.js';

describe('operations endpoints', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('GET /health/live answers 200 while the process is up', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health/live' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('GET /health/ready answers 200 with the database up', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/health/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'ok', info: { database: { status: 'up' } } });
  });

  it('GET /metrics counts requests by route template and status, with a latency histogram and process metrics', async () => {
    await t.app.inject({ method: 'GET', url: '/health/live' });
    await t.app.inject({ method: 'GET', url: '/health/live' });
    await t.app.inject({ method: 'GET', url: '/does-not-exist/123' });
    const res = await t.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const live = /http_requests_total\{method="GET",route="\/health\/live",status="200"\} (\d+)/.exec(res.body);
    expect(Number(live?.[1])).toBeGreaterThanOrEqual(2);
    expect(res.body).toMatch(/http_requests_total\{method="GET",route="unmatched",status="404"\} 1/);
    expect(res.body).not.toContain('/does-not-exist/123');
    expect(res.body).toMatch(/http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/health\/live",status="200"\}/);
    expect(res.body).toMatch(/^process_cpu_seconds_total \d/m);
    expect(res.body).toMatch(/^nodejs_eventloop_lag_seconds /m);
  });

  it("GET /metrics reports TypeORM's pool: its size, the connections in use and idle, the callers waiting", async () => {
    const metric = (body: string, name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(body)?.[1]);
    // A connection held in a transaction while /metrics is read shows as active.
    const holding = t.app.get<DataSource>(getDataSourceToken()).createQueryRunner();
    await holding.startTransaction();
    try {
      const body = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      expect(metric(body, 'db_pool_max_connections')).toBe(10);
      expect(metric(body, 'db_pool_connections\\{state="active"\\}')).toBeGreaterThanOrEqual(1);
      expect(metric(body, 'db_pool_waiting_requests')).toBe(0);
      expect(body).toMatch(/^db_pool_connections\{state="idle"\} \d+$/m);
    } finally {
      await holding.rollbackTransaction();
      await holding.release();
    }
  });

  it('GET /docs serves the OpenAPI UI and /docs/openapi.json the document', async () => {
    const ui = await t.app.inject({ method: 'GET', url: '/docs' });
    expect(ui.statusCode).toBe(200);
    expect(ui.headers['content-type']).toMatch(/text\/html/);
    expect(ui.body).toContain('swagger-ui');
    const doc = await t.app.inject({ method: 'GET', url: '/docs/openapi.json' });
    expect(doc.statusCode).toBe(200);
    const spec = doc.json();
    expect(spec.openapi).toMatch(/^3\./);
    expect(spec.info.title).toBe('Tax Document Gateway');
    expect(Object.keys(spec.paths)).toEqual(expect.arrayContaining(['/health/live', '/health/ready']));
  });

  it('writes structured JSON request logs with the request id and never the secret headers', async () => {
    const secrets = {
      'x-api-key': 'sk_tax_SECRETKEYVALUE0123456789abcdefXYZ',
      authorization: 'Bearer admin-secret-value-123456',
      'x-provider-signature': 'deadbeefcafebabe0123',
    };
    await t.app.inject({ method: 'GET', url: '/health/live', headers: { ...secrets, 'x-request-id': 'log-check-1' } });
    const lines = t.logs().trim().split('\n');
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const entry = entries.find((e) => (e.req as { id?: string } | undefined)?.id === 'log-check-1');
    expect(entry).toMatchObject({ msg: 'request completed', req: { method: 'GET', url: '/health/live' }, res: { statusCode: 200 } });
    // The line's whole shape, field by field, as operators' queries read it.
    expect(Object.keys(entry!)).toEqual(['level', 'time', 'pid', 'hostname', 'req', 'res', 'responseTime', 'msg']);
    expect(entry!.req).toEqual({ id: 'log-check-1', method: 'GET', url: '/health/live', remoteAddress: '127.0.0.1' });
    expect(entry!.responseTime).toEqual(expect.any(Number));
    // Nest's own lines name their context beside the message.
    const started = entries.find((e) => e.msg === 'Nest application successfully started');
    expect(started && Object.keys(started)).toEqual(['level', 'time', 'pid', 'hostname', 'context', 'msg']);
    expect(started).toMatchObject({ level: 30, context: 'NestApplication' });
    for (const value of Object.values(secrets)) expect(t.logs()).not.toContain(value);
    expect(t.logs()).not.toContain('SECRETKEYVALUE');
  });

  it('describes the documents API in OpenAPI: fields, examples, headers and problem responses', async () => {
    const spec = (await t.app.inject({ method: 'GET', url: '/docs/openapi.json' })).json();
    const create = spec.paths['/api/v1/documents'].post;
    expect(create.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'X-Idempotency-Key', in: 'header', required: true })]));
    expect(Object.keys(create.responses).sort()).toEqual(['201', '401', '409', '413', '415', '422', '429', '431', '500', '503']);
    expect(create.responses['409'].content['application/problem+json'].schema.$ref).toBe('#/components/schemas/ProblemDto');
    const body = spec.components.schemas.CreateDocumentDto;
    expect(body.required).toEqual(expect.arrayContaining(['source', 'externalId', 'type', 'taxpayer', 'issueDate', 'currency', 'totalAmount', 'taxAmount']));
    expect(body.properties.totalAmount).toMatchObject({ example: '119.00', pattern: expect.any(String) });
    expect(body.properties.type.enum).toEqual(['INVOICE', 'CREDIT_NOTE', 'RECEIPT', 'TAX_RETURN']);
    expect(spec.components.schemas.DocumentResponseDto.properties.payment.$ref).toBe('#/components/schemas/PaymentDto');
    for (const [path, method] of [
      ['/api/v1/documents/{id}', 'get'],
      ['/api/v1/documents/{id}/cancel', 'post'],
      ['/api/v1/events', 'get'],
      ['/api/v1/documents', 'get'],
    ]) {
      const operation = spec.paths[path][method];
      expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '401']));
    }
    expect(Object.keys(spec.paths['/api/v1/documents/{id}/cancel'].post.responses)).toEqual(expect.arrayContaining(['404', '409', '422']));
    expect(spec.components.securitySchemes).toMatchObject({ apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } });
  });
});

describe('secrets a caller put into a URL or X-Request-Id', () => {
  const SECRETS = {
    'an API key': generateOpaqueToken('sk_tax_'),
    'a personal admin token': generateOpaqueToken('adm_tax_'),
    'the admin token': TEST_ADMIN_TOKEN,
    'the bank secret': TEST_WEBHOOK_SECRET,
    'a console session token': generateOpaqueToken('tdgs_'),
    'a CSRF token': randomBytes(32).toString('base64url'),
    'a 64-hex signature': randomBytes(32).toString('hex'),
    'a push secret': `whsec_${randomBytes(24).toString('base64')}`,
  };
  /** What follows the secret, as a client would write it unencoded. */
  const TRAILERS: Record<string, string> = { '': '', '!': '!', ',': ',', ' ': '%20', '"': '"', '@': '@', '\n': '%0a' };
  const ENCODINGS: Record<string, (text: string, trailer: string) => string> = {
    'as typed': (text, trailer) => text + TRAILERS[trailer],
    'percent-encoded once': (text, trailer) => encodeURIComponent(text + trailer),
    'percent-encoded twice': (text, trailer) => encodeURIComponent(encodeURIComponent(text + trailer)),
  };
  const POSITIONS: Record<string, (value: string) => string> = {
    'a path segment': (value) => `/nope/${value}`,
    'a path segment after a prefix': (value) => `/nope/x-${value}`,
    'a query value': (value) => `/api/v1/me?q=${value}&limit=5`,
    'a bare query parameter': (value) => `/api/v1/me?${value}`,
    'after a semicolon': (value) => `/api/v1/me;${value}`,
  };
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it.each(Object.entries(SECRETS))('never logs %s, in any position, encoding or with any character after it', async (_kind, secret) => {
    const forms = [secret, encodeURIComponent(secret), encodeURIComponent(encodeURIComponent(secret))];
    for (const [position, at] of Object.entries(POSITIONS)) {
      for (const [encoding, encode] of Object.entries(ENCODINGS)) {
        for (const trailer of Object.keys(TRAILERS)) {
          const res = await t.app.inject({ method: 'GET', url: at(encode(secret, trailer)) });
          // Refused (404 or 401), so logged at warn; and the problem's instance is redacted by the same rule.
          expect([position, encoding, trailer, res.statusCode >= 400, forms.some((form) => res.body.includes(form))]).toEqual([
            position,
            encoding,
            trailer,
            true,
            false,
          ]);
        }
      }
    }
    // A request id that is, or carries, a secret is replaced by a generated one.
    for (const trailer of ['', '.', ':', '-x']) {
      const res = await t.app.inject({ method: 'GET', url: '/no-such-route', headers: { 'x-request-id': `${secret}${trailer}` } });
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(res.json().requestId).toBe(res.headers['x-request-id']);
    }
    const logs = t.logs();
    expect(logs).toContain('"msg":"request completed"');
    expect(forms.filter((form) => logs.includes(form))).toEqual([]);
  });

  it('still echoes a plain request id, a UUID among them', async () => {
    for (const id of ['trace-42', '6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b', 'batch:2026-12-02.7']) {
      const res = await t.app.inject({ method: 'GET', url: '/no-such-route', headers: { 'x-request-id': id } });
      expect(res.headers['x-request-id']).toBe(id);
    }
  });
});

describe("a refused request's log line", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { LOG_LEVEL: 'info' } });
  });
  afterAll(() => t.close());

  const linesOf = (requestId: string) =>
    t
      .logs()
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown> & { req?: { id?: string }; requestId?: string })
      .filter((entry) => entry.req?.id === requestId || entry.requestId === requestId);
  const completed = (requestId: string) => linesOf(requestId).filter((entry) => entry.msg === 'request completed' || entry.msg === 'request errored');

  it("names the problem's code beside the status, and for the idempotency refusals and a replay the key's state", async () => {
    const source = await newSourceWithKey(t.app);
    const headers = (id: string, key: string) => ({
      'x-request-id': id,
      'x-api-key': source.key,
      'x-idempotency-key': key,
      'content-type': 'application/json',
    });
    const post = (id: string, key: string, body: object) =>
      t.app.inject({ method: 'POST', url: '/api/v1/documents', headers: headers(id, key), payload: JSON.stringify(body) });

    await t.app.inject({ method: 'GET', url: '/no-such-route', headers: { 'x-request-id': 'refused-404' } });
    const key = newIdempotencyKey();
    const body = documentBody(source.source);
    expect((await post('first', key, body)).statusCode).toBe(201);
    expect((await post('reused', key, { ...body, externalId: 'other' })).statusCode).toBe(422);
    expect((await post('duplicate', newIdempotencyKey(), body)).statusCode).toBe(409);
    const duplicateKey = newIdempotencyKey();
    expect((await post('duplicate-stored', duplicateKey, body)).statusCode).toBe(409);
    const replayed = await post('duplicate-replayed', duplicateKey, body);
    expect([replayed.statusCode, replayed.headers['idempotent-replayed']]).toEqual([409, 'true']);

    const held = documentBody(source.source);
    const hold = await holdDocumentInsert(t.db, t.databaseUrl, held.externalId as string);
    try {
      const heldKey = newIdempotencyKey();
      const first = post('held', heldKey, held);
      await hold.held();
      expect((await post('in-use', heldKey, held)).statusCode).toBe(409);
      await hold.release();
      expect((await first).statusCode).toBe(201);
    } finally {
      await hold.remove();
    }

    await waitFor(async () => completed('in-use').length > 0, 'the last request line');
    const res = (id: string) => completed(id).map((entry) => [entry.level, entry.res]);
    expect(res('refused-404')).toEqual([[40, { statusCode: 404, code: 'NOT_FOUND' }]]);
    expect(res('reused')).toEqual([[40, { statusCode: 422, code: 'IDEMPOTENCY_KEY_REUSED', idempotencyKey: 'reused' }]]);
    expect(res('duplicate')).toEqual([[40, { statusCode: 409, code: 'DUPLICATE_DOCUMENT' }]]);
    expect(res('duplicate-replayed')).toEqual([[40, { statusCode: 409, code: 'DUPLICATE_DOCUMENT', idempotencyKey: 'replayed' }]]);
    expect(res('in-use')).toEqual([[40, { statusCode: 409, code: 'IDEMPOTENCY_KEY_IN_USE', idempotencyKey: 'in_use' }]]);
    // The line's shape is the pinned one (operations endpoints, above): only `res` says more.
    expect(Object.keys(completed('in-use')[0])).toEqual(['level', 'time', 'pid', 'hostname', 'req', 'res', 'responseTime', 'msg']);
  });

  it('says of a 503 answered at once by the shut connection gate that no attempt was made, and names the failure on the request line', async () => {
    const gate = t.app.get(ConnectionGate);
    const source = await newSourceWithKey(t.app);
    // The gate's attempt to reach the database again is held back, so the gate stays shut until the test reopens it.
    const reach = jest.spyOn(gate as unknown as { reach: () => Promise<void> }, 'reach').mockImplementation(() => new Promise(() => undefined));
    try {
      gate.connectFailed(new Error('timeout expired'));
      expect(gate.open).toBe(false);
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/documents', headers: { 'x-api-key': source.key, 'x-request-id': 'gate-shut' } });
      expect(res.statusCode).toBe(503);
      expect(res.json().detail).toBe('The database is unreachable; try again shortly');
    } finally {
      reach.mockRestore();
      await (gate as unknown as { attempt: (lastDelayMs: number) => Promise<void> }).attempt(100);
    }
    expect(gate.open).toBe(true);
    const [unavailable] = linesOf('gate-shut').filter((entry) => entry.msg === 'Database unavailable: unreachable');
    expect(unavailable).toMatchObject({
      level: 40,
      cause: 'unreachable',
      message: expect.stringMatching(/^gate shut after a failed connection attempt \d+\.\d s ago, no attempt made$/),
    });
    expect(unavailable.code).toBeUndefined();
    expect(JSON.stringify(linesOf('gate-shut'))).not.toContain('timeout expired');
    // Written once the answer is out, which may be after inject has it.
    const [line] = await waitFor(async () => completed('gate-shut').length > 0 && completed('gate-shut'), 'the request line');
    expect(line.res).toEqual({ statusCode: 503, code: 'SERVICE_UNAVAILABLE', cause: 'unreachable' });
  });
});

describe('request logs at the default level', () => {
  it('writes no line for a successful request, and a warn line for a refused one', async () => {
    const t = await startTestApp({ env: { LOG_LEVEL: 'info' } });
    try {
      await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'quiet-1' } });
      await t.app.inject({ method: 'GET', url: '/no-such-route', headers: { 'x-request-id': 'refused-1' } });
      const entries = t
        .logs()
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { level: number; req?: { id?: string } });
      expect(entries.filter((e) => e.req?.id === 'quiet-1')).toEqual([]);
      expect(entries.filter((e) => e.req?.id === 'refused-1').map((e) => e.level)).toEqual([40]);
    } finally {
      await t.close();
    }
  });
});

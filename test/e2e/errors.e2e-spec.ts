import { Controller, Get, Module } from '@nestjs/common';
import { documentBody, newSourceWithKey, postDocument } from '../support/factories.js';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from '../support/test-app.js';

/** A route that fails the way a bug would: with SQL text and a stack that must never leak. */
@Controller('__probe')
class FailingController {
  @Get('boom')
  boom(): never {
    const error = new Error('relation "secret_table" does not exist: SELECT key_hash FROM api_keys');
    (error as Error & { query?: string }).query = 'SELECT key_hash FROM api_keys WHERE id = $1';
    throw error;
  }
}

@Module({ controllers: [FailingController] })
class FailingModule {}

const PROBLEM = /^application\/problem\+json/;

describe('error model', () => {
  let t: TestApp;

  /** A real POST route that takes a JSON body, behind the admin token. */
  const postAsAdmin = (payload: string) =>
    t.app.inject({
      method: 'POST',
      url: '/admin/api-keys',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
      payload,
    });

  beforeAll(async () => {
    t = await startTestApp({ env: { BODY_LIMIT_BYTES: '2048' }, extraModules: [FailingModule] });
  });
  afterAll(() => t.close());

  it('answers an unknown route with 404 NOT_FOUND in RFC 9457 form', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/no/such/route?x=1' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    const body = res.json();
    expect(body).toEqual({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      code: 'NOT_FOUND',
      detail: expect.any(String),
      instance: '/no/such/route',
      requestId: res.headers['x-request-id'],
    });
  });

  it('answers a body over BODY_LIMIT_BYTES with 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/health/live',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ pad: 'x'.repeat(4096) }),
    });
    expect(res.statusCode).toBe(413);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.json()).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE', title: 'Content Too Large' });
  });

  it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/xml'])('answers a %s body with 415 UNSUPPORTED_MEDIA_TYPE', async (contentType) => {
    const res = await t.app.inject({ method: 'POST', url: '/health/live', headers: { 'content-type': contentType }, payload: 'a=1' });
    expect(res.statusCode).toBe(415);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.json()).toMatchObject({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
  });

  it('answers a body without a content type with 415', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/health/live', payload: Buffer.from('{"a":1}') });
    expect(res.statusCode).toBe(415);
    expect(res.json().code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it.each(['{bad', '{"a":1', '"unterminated'])('answers unparseable JSON %p with 422 VALIDATION_ERROR naming the body', async (payload) => {
    const res = await postAsAdmin(payload);
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.json()).toMatchObject({
      status: 422,
      code: 'VALIDATION_ERROR',
      title: 'Unprocessable Content',
      detail: 'The request body is not valid JSON',
      errors: [{ field: 'body', message: 'is not valid JSON' }],
    });
  });

  it('checks the admin token before it looks at the body', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/admin/api-keys', headers: { 'content-type': 'application/json' }, payload: '{bad' });
    expect(res.statusCode).toBe(401);
  });

  it.each([
    ['{"source":"a\\u0000b"}', 'source', 'must not contain NUL characters'],
    ['{"source":"ok-source","name":{"constructor":"x"}}', 'name.constructor', 'is a reserved name and cannot be used as a key'],
    // Valid JSON, so not "is not valid JSON": the key is named by its path, as any other reserved name.
    ['{"source":"ok-source","__proto__":{"admin":true}}', '__proto__', 'is a reserved name and cannot be used as a key'],
  ])('refuses %s, which could not be stored as sent, with 422 naming %s', async (payload, field, message) => {
    const res = await postAsAdmin(payload);
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([{ field, message }]);
  });

  it('refuses a key that appears twice in one object with 422 naming it by its path, on the admin API and the API alike', async () => {
    const admin = await postAsAdmin('{"source":"ok-source","name":"a","source":"other-source"}');
    expect([admin.statusCode, admin.json().code, admin.json().errors]).toEqual([
      422,
      'VALIDATION_ERROR',
      [{ field: 'source', message: 'appears more than once in its object' }],
    ]);

    const key = await newSourceWithKey(t.app);
    const body = JSON.stringify(documentBody(key.source));
    const cases: Array<[string, string]> = [
      [body.replace('"country":"DE"', '"country":"DE","country":"FR"'), 'taxpayer.country'],
      [body.replace(/}$/, ',"totalAmount":"1.00"}'), 'totalAmount'],
      [body.replace(/}$/, ',"metadata":{"k":"1","k":"2"}}'), 'metadata.k'],
    ];
    for (const [payload, field] of cases) {
      expect(payload).not.toBe(body);
      const res = await postDocument(t.app, key.key, payload);
      expect([field, res.statusCode, res.json().code, res.json().errors]).toEqual([
        field,
        422,
        'VALIDATION_ERROR',
        [{ field, message: 'appears more than once in its object' }],
      ]);
    }
    const { rows } = await t.db.query('SELECT count(*)::int AS n FROM documents WHERE source = $1', [key.source]);
    expect(rows[0].n).toBe(0);
  });

  it('answers an unexpected failure with 500 INTERNAL_ERROR and no internals, and logs it with the request id', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/__probe/boom', headers: { 'x-request-id': 'req-boom-1' } });
    expect(res.statusCode).toBe(500);
    expect(res.headers['content-type']).toMatch(PROBLEM);
    expect(res.json()).toEqual({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      code: 'INTERNAL_ERROR',
      detail: 'An unexpected error occurred',
      instance: '/__probe/boom',
      requestId: 'req-boom-1',
    });
    expect(res.body).not.toMatch(/secret_table|SELECT|api_keys|at .*\.ts/);
    const logged = t
      .logs()
      .split('\n')
      .find((line) => line.includes('"requestId":"req-boom-1"'));
    expect(logged).toBeDefined();
    expect(logged).toContain('stack');
    expect(logged).not.toContain('WHERE id = $1');
  });

  it('refuses an empty cursor as the OpenAPI document does: a 422 naming the parameter, never the first page', async () => {
    const { key } = await newSourceWithKey(t.app);
    const api = { 'x-api-key': key };
    const admin = { authorization: `Bearer ${TEST_ADMIN_TOKEN}` };
    const document = (await t.app.inject({ method: 'GET', url: '/docs/openapi.json' })).json();
    for (const [url, headers, parameter, path] of [
      ['/api/v1/documents?cursor=', api, 'cursor', '/api/v1/documents'],
      ['/api/v1/events?after=', api, 'after', '/api/v1/events'],
      ['/admin/api-keys?cursor=&limit=5', admin, 'cursor', '/admin/api-keys'],
      ['/admin/outbound-deliveries?cursor=', admin, 'cursor', '/admin/outbound-deliveries'],
    ] as const) {
      const res = await t.app.inject({ method: 'GET', url, headers });
      expect({ url, status: res.statusCode, errors: res.json().errors }).toEqual({
        url,
        status: 422,
        errors: [{ field: parameter, message: 'must not be empty; omit it to start from the beginning' }],
      });
      const declared = document.paths[path].get.parameters.find((p: { name: string }) => p.name === parameter);
      expect(new RegExp(declared.schema.pattern).test('')).toBe(false);
    }
  });

  describe('X-Request-Id', () => {
    it('echoes a sane incoming id', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': 'abc-123:XYZ.9_z' } });
      expect(res.headers['x-request-id']).toBe('abc-123:XYZ.9_z');
    });

    it.each(['has spaces in it', 'x'.repeat(129), '<script>', ''])('replaces an unsafe id %p with a generated one', async (id) => {
      const res = await t.app.inject({ method: 'GET', url: '/health/live', headers: { 'x-request-id': id } });
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('is on every response, errors included, and matches the body', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/missing' });
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.json().requestId).toBe(res.headers['x-request-id']);
    });
  });
});

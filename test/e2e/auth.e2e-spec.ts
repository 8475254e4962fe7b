import { Client } from 'pg';
import { hashApiKey } from '../../src/auth/api-key-format.js';
import { SchedulerRegistry } from '@nestjs/schedule';
import { KEY_USAGE_FLUSH_JOB, KeyUsageRecorder } from '../../src/auth/key-usage.recorder.js';
import { adminHeaders, documentBody, newIdempotencyKey, newSourceWithKey, postDocument } from '../support/factories.js';
import { waitFor } from '../support/processes.js';
import { startTestApp, TestApp } from '../support/test-app.js';

const me = (t: TestApp, key?: string) => t.app.inject({ method: 'GET', url: '/api/v1/me', headers: key === undefined ? {} : { 'x-api-key': key } });

/** A 401 body without the parts that differ per request. */
const shape = (body: Record<string, unknown>) => ({ ...body, requestId: undefined });

describe('API keys on /api/v1', () => {
  let t: TestApp;
  let db: Client;

  beforeAll(async () => {
    t = await startTestApp();
    db = t.db;
  });
  afterAll(() => t.close());

  it('GET /api/v1/me tells the key its source, id, prefix and expiry', async () => {
    const expiresAt = new Date(Date.now() + 86400_000).toISOString();
    const issued = await newSourceWithKey(t.app, 'acme-erp', { expiresAt });
    const res = await me(t, issued.key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ source: 'acme-erp', keyId: issued.id, keyPrefix: issued.key.slice(0, 12), expiresAt });
  });

  it('gives missing, malformed, unknown, revoked and expired keys the same 401 body', async () => {
    const revoked = await newSourceWithKey(t.app);
    await t.app.inject({ method: 'POST', url: `/admin/api-keys/${revoked.id}/revoke`, headers: adminHeaders });
    const expired = await newSourceWithKey(t.app);
    await db.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [expired.id]);

    const cases: Record<string, string | undefined> = {
      missing: undefined,
      empty: '',
      malformed: 'not-a-key',
      otherProduct: 'sk_live_' + 'a'.repeat(43),
      unknown: 'sk_tax_' + 'a'.repeat(43),
      revoked: revoked.key,
      expired: expired.key,
    };
    const bodies = [];
    for (const [name, key] of Object.entries(cases)) {
      const res = await me(t, key);
      expect({ name, status: res.statusCode }).toEqual({ name, status: 401 });
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      bodies.push(shape(res.json()));
    }
    expect(bodies[0]).toMatchObject({ status: 401, code: 'UNAUTHORIZED', instance: '/api/v1/me' });
    for (const body of bodies) expect(body).toEqual(bodies[0]);
  });

  it('stops a key on the very next request after revocation', async () => {
    const issued = await newSourceWithKey(t.app);
    expect((await me(t, issued.key)).statusCode).toBe(200);
    await t.app.inject({ method: 'POST', url: `/admin/api-keys/${issued.id}/revoke`, headers: adminHeaders });
    expect((await me(t, issued.key)).statusCode).toBe(401);
  });

  it('refuses a revoked or expired key on the routes whose read is made with the key look-up (a document, a replay)', async () => {
    const issued = await newSourceWithKey(t.app);
    const idempotencyKey = newIdempotencyKey();
    const body = documentBody(issued.source);
    const created = await postDocument(t.app, issued.key, body, idempotencyKey);
    expect(created.statusCode).toBe(201);
    const read = () => t.app.inject({ method: 'GET', url: `/api/v1/documents/${created.json().id}`, headers: { 'x-api-key': issued.key } });
    const replay = () => postDocument(t.app, issued.key, body, idempotencyKey);
    expect([(await read()).statusCode, (await replay()).statusCode]).toEqual([200, 201]);

    await db.query(`UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, [issued.id]);
    expect([(await read()).statusCode, (await replay()).statusCode]).toEqual([401, 401]);
    await db.query(`UPDATE api_keys SET expires_at = NULL WHERE id = $1`, [issued.id]);
    expect((await read()).statusCode).toBe(200);
    await t.app.inject({ method: 'POST', url: `/admin/api-keys/${issued.id}/revoke`, headers: adminHeaders });
    const refused = [await read(), await replay()];
    expect(refused.map((res) => [res.statusCode, res.json().code])).toEqual([
      [401, 'UNAUTHORIZED'],
      [401, 'UNAUTHORIZED'],
    ]);
  });

  it('stops a key at its expiry', async () => {
    // Works before its expiry: an hour ahead, however long this machine takes to get to the check.
    const later = await newSourceWithKey(t.app, undefined, { expiresAt: new Date(Date.now() + 3600_000).toISOString() });
    expect((await me(t, later.key)).statusCode).toBe(200);
    // Stops at it, and not before (far enough ahead that it is still in the future when the key is issued).
    const expiresAt = Date.now() + 5000;
    const soon = await newSourceWithKey(t.app, undefined, { expiresAt: new Date(expiresAt).toISOString() });
    const stoppedBy = await waitFor(async () => (await me(t, soon.key)).statusCode === 401 && Date.now(), 'the key to stop');
    expect(stoppedBy).toBeGreaterThanOrEqual(expiresAt);
  });

  it('records lastUsedAt in batches, not with a write per request', async () => {
    // Flushes happen only when this test says so.
    t.app.get(SchedulerRegistry).deleteInterval(KEY_USAGE_FLUSH_JOB);
    const issued = await newSourceWithKey(t.app);
    const before = Date.now();
    for (let i = 0; i < 5; i++) expect((await me(t, issued.key)).statusCode).toBe(200);
    const lastUsed = async () => (await db.query('SELECT last_used_at FROM api_keys WHERE id = $1', [issued.id])).rows[0].last_used_at;
    expect(await lastUsed()).toBeNull();
    await t.app.get(KeyUsageRecorder).flush();
    const recorded: Date = await lastUsed();
    expect(recorded.getTime()).toBeGreaterThanOrEqual(before - 5);
    const view = await t.app.inject({ method: 'GET', url: `/admin/api-keys/${issued.id}`, headers: adminHeaders });
    expect(view.json().lastUsedAt).toBe(recorded.toISOString());
  });

  it('stores only a SHA-256 hash of the key', async () => {
    const issued = await newSourceWithKey(t.app);
    const { rows } = await db.query('SELECT * FROM api_keys WHERE id = $1', [issued.id]);
    expect(rows[0].key_hash).toBe(hashApiKey(issued.key));
    expect(JSON.stringify(rows[0])).not.toContain(issued.key);
    expect(JSON.stringify(rows[0])).not.toContain(issued.key.slice(12, -4));
  });
});

describe('revocation across two instances on one database', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await startTestApp();
    b = await startTestApp({ databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b.close();
    await a.close();
  });

  it('a key revoked through one instance is refused by the other on its next request', async () => {
    const issued = await newSourceWithKey(a.app);
    expect((await me(b, issued.key)).statusCode).toBe(200);
    expect((await me(a, issued.key)).statusCode).toBe(200);
    const revoked = await a.app.inject({ method: 'POST', url: `/admin/api-keys/${issued.id}/revoke`, headers: adminHeaders });
    expect(revoked.statusCode).toBe(200);
    expect((await me(b, issued.key)).statusCode).toBe(401);
    expect((await me(a, issued.key)).statusCode).toBe(401);
  });
});

describe('rate limit per API key', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '3' } });
  });
  afterAll(() => t.close());

  it('answers 429 RATE_LIMITED with Retry-After past the limit, before the idempotency check, for that key only', async () => {
    const limited = await newSourceWithKey(t.app);
    const other = await newSourceWithKey(t.app);
    for (let i = 0; i < 3; i++) expect((await me(t, limited.key)).statusCode).toBe(200);
    const refused = await t.app.inject({
      method: 'POST',
      url: '/api/v1/documents',
      headers: { 'x-api-key': limited.key, 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(refused.statusCode).toBe(429);
    expect(refused.json()).toMatchObject({ code: 'RATE_LIMITED', status: 429 });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect((await me(t, limited.key)).statusCode).toBe(429);
    expect((await me(t, other.key)).statusCode).toBe(200);
    // An unknown key is refused as unknown, not counted against anyone.
    expect((await me(t, 'sk_tax_' + 'z'.repeat(43))).statusCode).toBe(401);
  });
});

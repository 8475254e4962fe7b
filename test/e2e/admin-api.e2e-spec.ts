import { createHash } from 'node:crypto';
import { adminHeaders, newSourceWithKey, uniqueSource } from '../support/factories.js';
import { earlyInAMinute, waitFor } from '../support/processes.js';
import { startTestApp, TestApp, TEST_ADMIN_TOKEN } from '../support/test-app.js';

const KEY_OBJECT_FIELDS = ['createdAt', 'expiresAt', 'id', 'last4', 'lastUsedAt', 'name', 'prefix', 'revokedAt', 'source', 'status'];

describe('admin REST endpoints', () => {
  let t: TestApp;
  const issuedKeys: string[] = [];

  const admin = (method: 'GET' | 'POST', url: string, payload?: object, address = '127.0.0.1') =>
    t.app.inject({ method, url, headers: adminHeaders, payload, remoteAddress: address });
  const me = (key: string) => t.app.inject({ method: 'GET', url: '/api/v1/me', headers: { 'x-api-key': key } });

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('GET / sends a person to the admin console, without needing a token', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/' });
    expect(res.statusCode).toBe(302);
    expect(res.headers.location).toBe('/admin');
  });

  describe('admin token', () => {
    it('takes the Bearer scheme in any case (RFC 9110), for ADMIN_TOKEN and for a personal token', async () => {
      const account = await admin('POST', '/admin/admins', { email: `${uniqueSource('bearer')}@example.com`, role: 'viewer' });
      const personal = await admin('POST', `/admin/admins/${account.json().id}/tokens`, { name: 'case' });
      expect(personal.statusCode).toBe(201);
      for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
        for (const credential of [TEST_ADMIN_TOKEN, personal.json().token]) {
          const res = await t.app.inject({ method: 'GET', url: '/admin/me', headers: { authorization: `${scheme} ${credential}` } });
          expect([scheme, res.statusCode]).toEqual([scheme, 200]);
        }
      }
    });

    const endpoints: Array<['GET' | 'POST', string]> = [
      ['POST', '/admin/api-keys'],
      ['GET', '/admin/api-keys'],
      ['GET', '/admin/api-keys/00000000-0000-4000-8000-000000000000'],
      ['POST', '/admin/api-keys/00000000-0000-4000-8000-000000000000/revoke'],
      ['POST', '/admin/api-keys/00000000-0000-4000-8000-000000000000/rotate'],
      ['GET', '/admin/audit-log'],
    ];

    it.each(endpoints)('%s %s answers 401 UNAUTHORIZED without the token, with a wrong one, or not as Bearer', async (method, url) => {
      for (const [i, authorization] of [undefined, 'Bearer wrong-token-value', `Basic ${TEST_ADMIN_TOKEN}`, TEST_ADMIN_TOKEN].entries()) {
        const res = await t.app.inject({
          method,
          url,
          headers: authorization ? { authorization } : {},
          payload: method === 'POST' ? { source: 'x-y' } : undefined,
          remoteAddress: `10.0.${endpoints.findIndex(([m, u]) => m === method && u === url)}.${i}`,
        });
        expect(res.statusCode).toBe(401);
        expect(res.json()).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
      }
    });

    it('answers further failures from an address with 429 after 10 in a minute, and still lets a good credential from it in', async () => {
      const attacker = '10.9.9.9';
      await earlyInAMinute();
      for (let i = 0; i < 10; i++) {
        const res = await t.app.inject({ method: 'GET', url: '/admin/api-keys', headers: { authorization: 'Bearer nope' }, remoteAddress: attacker });
        expect(res.statusCode).toBe(401);
      }
      const locked = await t.app.inject({ method: 'GET', url: '/admin/api-keys', headers: { authorization: 'Bearer nope' }, remoteAddress: attacker });
      expect(locked.statusCode).toBe(429);
      expect(locked.json()).toMatchObject({ code: 'RATE_LIMITED', status: 429 });
      const retryAfter = Number(locked.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Behind a proxy without TRUSTED_PROXIES every client shares one address: the administrators' good
      // credentials (the break-glass token, a personal token) pass however many failures it has, and do not
      // lift the lockout for the failures that follow.
      expect((await admin('GET', '/admin/api-keys', undefined, attacker)).statusCode).toBe(200);
      const person = (await admin('POST', '/admin/admins', { email: `${uniqueSource('shared')}@example.com`, role: 'viewer' })).json();
      const token = (await admin('POST', `/admin/admins/${person.id}/tokens`, {})).json().token;
      const withToken = await t.app.inject({ method: 'GET', url: '/admin/me', headers: { authorization: `Bearer ${token}` }, remoteAddress: attacker });
      expect(withToken.statusCode).toBe(200);
      expect(
        (await t.app.inject({ method: 'GET', url: '/admin/api-keys', headers: { authorization: 'Bearer nope' }, remoteAddress: attacker })).statusCode,
      ).toBe(429);
      expect(
        (await t.app.inject({ method: 'GET', url: '/admin/api-keys', headers: { authorization: 'Bearer nope' }, remoteAddress: '10.9.9.10' })).statusCode,
      ).toBe(401);
    });

    it('does not count a request without any credential (the console asking for its session) against the lockout', async () => {
      const visitor = '10.9.7.6';
      const failures = async () =>
        Number((await t.db.query('SELECT coalesce(sum(failures), 0) AS n FROM admin_auth_failures WHERE remote_address = $1', [visitor])).rows[0].n);
      for (let i = 0; i < 15; i++) {
        const res = await t.app.inject({ method: 'GET', url: '/admin/me', remoteAddress: visitor });
        expect(res.statusCode).toBe(401);
        expect(res.json()).toMatchObject({ code: 'UNAUTHORIZED' });
      }
      expect(await failures()).toBe(0);
      expect((await admin('GET', '/admin/me', undefined, visitor)).statusCode).toBe(200);
      // A session cookie that is no longer good is a credential: it counts like a wrong token.
      const stale = await t.app.inject({ method: 'GET', url: '/admin/me', headers: { cookie: 'tdg_admin_session=gone' }, remoteAddress: visitor });
      expect(stale.statusCode).toBe(401);
      expect(await failures()).toBe(1);
    });

    it('holds the limit against parallel guesses, and a right token does not count as a failure', async () => {
      const attacker = '10.9.8.7';
      await earlyInAMinute();
      const guesses = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          t.app.inject({ method: 'GET', url: '/admin/api-keys', headers: { authorization: `Bearer guess-${i}` }, remoteAddress: attacker }),
        ),
      );
      expect(guesses.filter((g) => g.statusCode === 401)).toHaveLength(10);
      expect(guesses.filter((g) => g.statusCode === 429)).toHaveLength(20);

      const admin2 = '10.9.8.8';
      for (let i = 0; i < 15; i++) expect((await admin('GET', '/admin/api-keys', undefined, admin2)).statusCode).toBe(200);
    });
  });

  describe('POST /admin/api-keys', () => {
    it('issues a key once: 201 with the key object and the key itself', async () => {
      const source = uniqueSource('acme');
      const res = await admin('POST', '/admin/api-keys', { source, name: 'ERP prod', expiresAt: '2099-01-01T00:00:00.000Z' });
      expect(res.statusCode).toBe(201);
      const body = res.json();
      issuedKeys.push(body.key);
      expect(Object.keys(body).sort()).toEqual([...KEY_OBJECT_FIELDS, 'key'].sort());
      expect(body).toMatchObject({
        source,
        name: 'ERP prod',
        status: 'ACTIVE',
        expiresAt: '2099-01-01T00:00:00.000Z',
        revokedAt: null,
        lastUsedAt: null,
      });
      expect(body.key).toMatch(/^sk_tax_[0-9A-Za-z]{43}$/);
      expect(body.prefix).toBe(body.key.slice(0, 12));
      expect(body.last4).toBe(body.key.slice(-4));
      expect((await me(body.key)).json().source).toBe(source);
    });

    it('needs no idempotency key, and each call issues a different key', async () => {
      const source = uniqueSource();
      const first = (await admin('POST', '/admin/api-keys', { source })).json();
      const second = (await admin('POST', '/admin/api-keys', { source })).json();
      issuedKeys.push(first.key, second.key);
      expect(first.key).not.toBe(second.key);
      expect(first.id).not.toBe(second.id);
    });

    it.each([
      [{}, 'source'],
      [{ source: 'Upper-Case' }, 'source'],
      [{ source: 'a' }, 'source'],
      [{ source: '-leading' }, 'source'],
      [{ source: 'ok-source', name: '' }, 'name'],
      [{ source: 'ok-source', name: 'x'.repeat(201) }, 'name'],
      [{ source: 'ok-source', expiresAt: 'tomorrow' }, 'expiresAt'],
      [{ source: 'ok-source', expiresAt: '2001-01-01T00:00:00.000Z' }, 'expiresAt'],
      [{ source: 'ok-source', admin: true }, 'admin'],
    ])('refuses %p with 422 naming %s, and issues nothing', async (payload, field) => {
      const before = (await admin('GET', '/admin/api-keys?source=ok-source')).json().data.length;
      const res = await admin('POST', '/admin/api-keys', payload);
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR', errors: expect.arrayContaining([expect.objectContaining({ field })]) });
      expect((await admin('GET', '/admin/api-keys?source=ok-source')).json().data).toHaveLength(before);
    });
  });

  describe('listing and reading', () => {
    it('lists keys of one source newest first, never with the key or its hash', async () => {
      const source = uniqueSource();
      const first = await newSourceWithKey(t.app, source);
      const second = await newSourceWithKey(t.app, source);
      await newSourceWithKey(t.app);
      issuedKeys.push(first.key, second.key);
      const res = await admin('GET', `/admin/api-keys?source=${source}`);
      expect(res.statusCode).toBe(200);
      const { data } = res.json();
      expect(data.map((k: { id: string }) => k.id)).toEqual([second.id, first.id]);
      for (const key of data) expect(Object.keys(key).sort()).toEqual(KEY_OBJECT_FIELDS);
      expect(res.body).not.toContain(first.key);
      expect(res.body).not.toContain(createHash('sha256').update(first.key).digest('hex'));
      const all = (await admin('GET', '/admin/api-keys')).json().data;
      expect(all.length).toBeGreaterThanOrEqual(3);
    });

    it('refuses a malformed source filter with 422', async () => {
      const res = await admin('GET', '/admin/api-keys?source=NOT%20OK');
      expect(res.statusCode).toBe(422);
      expect(res.json().errors[0].field).toBe('source');
    });

    it('reads one key, and answers 404 for an unknown or non-UUID id', async () => {
      const issued = await newSourceWithKey(t.app);
      const res = await admin('GET', `/admin/api-keys/${issued.id}`);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id: issued.id, source: issued.source, status: 'ACTIVE' });
      expect(res.body).not.toContain(issued.key);
      for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', "1'; DROP TABLE api_keys; --"]) {
        const missing = await admin('GET', `/admin/api-keys/${encodeURIComponent(id)}`);
        expect(missing.statusCode).toBe(404);
        expect(missing.json().code).toBe('NOT_FOUND');
      }
    });
  });

  describe('revoke', () => {
    it('revokes at once; revoking again keeps the first time', async () => {
      const issued = await newSourceWithKey(t.app);
      const res = await admin('POST', `/admin/api-keys/${issued.id}/revoke`);
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({ id: issued.id, status: 'REVOKED', revokedAt: expect.any(String) });
      expect((await me(issued.key)).statusCode).toBe(401);
      const again = await admin('POST', `/admin/api-keys/${issued.id}/revoke`);
      expect(again.statusCode).toBe(200);
      expect(again.json().revokedAt).toBe(body.revokedAt);
      expect((await admin('POST', '/admin/api-keys/00000000-0000-4000-8000-000000000000/revoke')).statusCode).toBe(404);
    });
  });

  describe('rotate', () => {
    it('issues a successor while the old key keeps working for the grace period', async () => {
      const old = await newSourceWithKey(t.app, undefined, { name: 'billing' });
      // An hour of grace: the old key works on, however long this machine takes to get to the checks.
      const res = await admin('POST', `/admin/api-keys/${old.id}/rotate`, { gracePeriodSeconds: 3600 });
      expect(res.statusCode).toBe(201);
      const next = res.json();
      issuedKeys.push(next.key);
      expect(next).toMatchObject({ source: old.source, name: 'billing', status: 'ACTIVE' });
      expect(next.key).toMatch(/^sk_tax_/);
      expect(next.id).not.toBe(old.id);
      expect((await me(old.key)).statusCode).toBe(200);
      expect((await me(next.key)).statusCode).toBe(200);
      const oldView = (await admin('GET', `/admin/api-keys/${old.id}`)).json();
      expect(oldView.status).toBe('ACTIVE');
      expect(Date.parse(oldView.revokedAt) - Date.parse(next.createdAt)).toBeGreaterThanOrEqual(3600_000);

      // Two seconds of grace: the key stops, not before the end the rotation set, and then shows as revoked.
      const last = (await admin('POST', `/admin/api-keys/${next.id}/rotate`, { gracePeriodSeconds: 2 })).json();
      issuedKeys.push(last.key);
      const end = Date.parse((await admin('GET', `/admin/api-keys/${next.id}`)).json().revokedAt);
      const stoppedBy = await waitFor(async () => (await me(next.key)).statusCode === 401 && Date.now(), 'the rotated key to stop');
      expect(stoppedBy).toBeGreaterThanOrEqual(end);
      expect((await me(last.key)).statusCode).toBe(200);
      expect((await admin('GET', `/admin/api-keys/${next.id}`)).json().status).toBe('REVOKED');
    });

    it('keeps the expiry on the successor, and refuses to rotate an already rotated key with 409', async () => {
      const expiresAt = '2099-06-30T12:00:00.000Z';
      const old = await newSourceWithKey(t.app, undefined, { expiresAt });
      const first = await admin('POST', `/admin/api-keys/${old.id}/rotate`, { gracePeriodSeconds: 60 });
      expect(first.json().expiresAt).toBe(expiresAt);
      const graceEnd = (await admin('GET', `/admin/api-keys/${old.id}`)).json().revokedAt;
      const second = await admin('POST', `/admin/api-keys/${old.id}/rotate`, { gracePeriodSeconds: 86400 });
      expect(second.statusCode).toBe(409);
      expect(second.json().code).toBe('INVALID_STATE_TRANSITION');
      expect((await admin('GET', `/admin/api-keys/${old.id}`)).json().revokedAt).toBe(graceEnd);
      expect((await admin('GET', `/admin/api-keys?source=${old.source}`)).json().data).toHaveLength(2);
    });

    it('with no grace period (the default) the old key stops at once', async () => {
      const old = await newSourceWithKey(t.app);
      const res = await t.app.inject({ method: 'POST', url: `/admin/api-keys/${old.id}/rotate`, headers: adminHeaders });
      expect(res.statusCode).toBe(201);
      expect((await me(old.key)).statusCode).toBe(401);
      expect((await me(res.json().key)).statusCode).toBe(200);
    });

    it('refuses a grace period outside 0–86400 with 422, and a revoked key with 409', async () => {
      const old = await newSourceWithKey(t.app);
      for (const gracePeriodSeconds of [-1, 86401, 1.5, '60']) {
        const res = await admin('POST', `/admin/api-keys/${old.id}/rotate`, { gracePeriodSeconds });
        expect(res.statusCode).toBe(422);
        expect(res.json().errors[0].field).toBe('gracePeriodSeconds');
      }
      expect((await me(old.key)).statusCode).toBe(200);
      await admin('POST', `/admin/api-keys/${old.id}/revoke`);
      const res = await admin('POST', `/admin/api-keys/${old.id}/rotate`, {});
      expect(res.statusCode).toBe(409);
      expect(res.json().code).toBe('INVALID_STATE_TRANSITION');
    });
  });

  describe('audit log', () => {
    it('records every change with action, key, source and address, newest first, and never a secret', async () => {
      const source = uniqueSource('audit');
      const created = (await admin('POST', '/admin/api-keys', { source }, '192.0.2.7')).json();
      await admin('POST', `/admin/api-keys/${created.id}/rotate`, { gracePeriodSeconds: 60 }, '192.0.2.8');
      const rotatedTo = (await admin('GET', `/admin/api-keys?source=${source}`)).json().data[0];
      await admin('POST', `/admin/api-keys/${rotatedTo.id}/revoke`, undefined, '192.0.2.9');

      const res = await admin('GET', '/admin/audit-log?limit=4');
      expect(res.statusCode).toBe(200);
      const { data } = res.json();
      expect(data.map((e: { action: string; keyId: string; source: string; remoteAddress: string }) => [e.action, e.keyId, e.source, e.remoteAddress])).toEqual(
        [
          ['api_key.revoked', rotatedTo.id, source, '192.0.2.9'],
          ['api_key.created', rotatedTo.id, source, '192.0.2.8'],
          ['api_key.rotated', created.id, source, '192.0.2.8'],
          ['api_key.created', created.id, source, '192.0.2.7'],
        ],
      );
      for (const entry of data) {
        expect(Object.keys(entry).sort()).toEqual([
          'action',
          'actor',
          'changes',
          'createdAt',
          'id',
          'keyId',
          'remoteAddress',
          'source',
          'targetId',
          'targetType',
        ]);
        // ADMIN_TOKEN is the break-glass credential: it names no person.
        expect(entry.actor).toEqual({ type: 'bootstrap', adminId: null, email: null });
        expect(entry).toMatchObject({ targetType: 'api_key', targetId: entry.keyId });
      }
      expect(res.body).not.toContain(created.key);
      expect((await admin('GET', '/admin/audit-log?limit=0')).statusCode).toBe(422);
      expect((await admin('GET', '/admin/audit-log?limit=201')).statusCode).toBe(422);
    });
  });

  it('never writes a plaintext key or a key hash to the log', () => {
    expect(issuedKeys.length).toBeGreaterThan(5);
    const logs = t.logs();
    expect(logs.length).toBeGreaterThan(1000);
    for (const key of issuedKeys) {
      expect(logs).not.toContain(key);
      expect(logs).not.toContain(key.slice(12, -4));
      expect(logs).not.toContain(createHash('sha256').update(key).digest('hex'));
    }
    expect(logs).not.toContain(TEST_ADMIN_TOKEN);
  });
});

describe('without ADMIN_TOKEN', () => {
  // The gateway's start-up always provides one (the variable, or the file it generates under DATA_DIR:
  // test/e2e/first-start.e2e-spec.ts); an app built without any must not fall back to a guessable one.
  it('an app built without a token accepts none, and says so in its log', async () => {
    const t = await startTestApp({ env: { ADMIN_TOKEN: '' } });
    try {
      for (const authorization of [`Bearer ${TEST_ADMIN_TOKEN}`, 'Bearer ', 'Bearer undefined']) {
        const res = await t.app.inject({ method: 'GET', url: '/admin/api-keys', headers: { authorization }, remoteAddress: '10.9.9.9' });
        expect(res.statusCode).toBe(401);
      }
      expect(t.logs()).toContain('ADMIN_TOKEN is not set: the admin endpoints accept no token');
    } finally {
      await t.close();
    }
  });
});

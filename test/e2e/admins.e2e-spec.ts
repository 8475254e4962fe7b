import { createHash, randomBytes } from 'node:crypto';
import { inSequence } from '../support/database.js';
import { adminHeaders, documentBody, IssuedKey, newIdempotencyKey, newSourceWithKey, postDocument, uniqueSource } from '../support/factories.js';
import { waitFor } from '../support/processes.js';
import { startTestApp, TestApp } from '../support/test-app.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

type Method = 'GET' | 'POST' | 'PATCH';
interface Token {
  id: string;
  token: string;
}
interface Admin {
  id: string;
  email: string;
}

const ENV = { OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true', OUTBOUND_WEBHOOKS_RETRY_SCHEDULE: '1h', OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS: '2' };

/** Administrators as people: accounts, roles, personal tokens, the audit trail, operators' tools. */
describe('administrators', () => {
  let t: TestApp;
  let other: TestApp;
  let receiver: WebhookReceiver;

  const as = (credential: string, method: Method, url: string, payload?: object, app = t) =>
    app.app.inject({ method, url, headers: { authorization: `Bearer ${credential}` }, payload, remoteAddress: '198.51.100.4' });
  const bootstrap = (method: Method, url: string, payload?: object) =>
    t.app.inject({ method, url, headers: adminHeaders, payload, remoteAddress: '198.51.100.1' });

  const newAdmin = async (role: 'viewer' | 'operator' | 'admin', name?: string): Promise<Admin> => {
    const res = await bootstrap('POST', '/admin/admins', { email: `${uniqueSource(role)}@example.com`, role, ...(name ? { name } : {}) });
    expect(res.statusCode).toBe(201);
    return res.json();
  };
  const tokenFor = async (admin: Admin): Promise<Token> => {
    const res = await bootstrap('POST', `/admin/admins/${admin.id}/tokens`, { name: 'laptop' });
    expect(res.statusCode).toBe(201);
    return res.json();
  };
  /** The newest 200 entries, all or those by one admin. */
  const auditOf = async (adminId: string | null) =>
    (await bootstrap('GET', `/admin/audit-log?${adminId ? `adminId=${adminId}&` : ''}limit=200`)).json().data as Array<Record<string, unknown>>;
  const count = async (table: string) => Number((await t.db.query(`SELECT count(*) FROM ${table}`)).rows[0].count);

  beforeAll(async () => {
    t = await startTestApp({ env: ENV });
    // A second instance on the same database: what one revokes, the other must refuse at once.
    other = await startTestApp({ env: ENV, databaseUrl: t.databaseUrl });
    receiver = await new WebhookReceiver(() => ({ status: 500 })).start();
  });
  afterAll(async () => {
    await receiver?.stop();
    await other?.close();
    await t?.close();
  });

  describe('accounts', () => {
    it('creates an admin object, refuses a second account for the same email whatever its case, and reads and pages them', async () => {
      const email = `${uniqueSource('ada')}@Example.com`;
      const res = await bootstrap('POST', '/admin/admins', { email, role: 'operator', name: 'Ada' });
      expect(res.statusCode).toBe(201);
      const created = res.json();
      expect(created).toEqual({
        id: expect.any(String),
        email,
        name: 'Ada',
        role: 'operator',
        disabledAt: null,
        createdAt: expect.any(String),
        lastSeenAt: null,
      });

      const duplicate = await bootstrap('POST', '/admin/admins', { email: email.toUpperCase(), role: 'viewer' });
      expect(duplicate.statusCode).toBe(409);
      expect(duplicate.headers['content-type']).toContain('application/problem+json');
      expect(duplicate.json().code).toBe('DUPLICATE_ADMIN');

      for (const bad of [
        { email, role: 'root' },
        { email: 'not-an-email', role: 'viewer' },
        { role: 'viewer' },
        { email: 'x@example.com', role: 'viewer', extra: 1 },
      ]) {
        const refused = await bootstrap('POST', '/admin/admins', bad);
        expect(refused.statusCode).toBe(422);
        expect(refused.json().code).toBe('VALIDATION_ERROR');
      }

      expect((await bootstrap('GET', `/admin/admins/${created.id}`)).json()).toEqual(created);
      expect((await bootstrap('GET', '/admin/admins/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
      expect((await bootstrap('GET', '/admin/admins/not-a-uuid')).statusCode).toBe(404);

      await newAdmin('viewer');
      await newAdmin('viewer');
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { data: Admin[]; nextCursor: string | null } = (await bootstrap('GET', `/admin/admins?limit=1${cursor ? `&cursor=${cursor}` : ''}`)).json();
        expect(page.data.length).toBeLessThanOrEqual(1);
        seen.push(...page.data.map((a) => a.id));
        cursor = page.nextCursor;
      } while (cursor);
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen.length).toBe(await count('admins'));
      expect((await bootstrap('GET', '/admin/admins?cursor=bm9wZQ')).statusCode).toBe(422);
    });

    it('changes role and name, and audits each change with the admin who made it', async () => {
      const boss = await newAdmin('admin');
      const bossToken = await tokenFor(boss);
      const target = await newAdmin('viewer');
      const res = await as(bossToken.token, 'PATCH', `/admin/admins/${target.id}`, { role: 'operator', name: 'Grace' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id: target.id, role: 'operator', name: 'Grace', disabledAt: null });
      expect((await as(bossToken.token, 'PATCH', `/admin/admins/${target.id}`, { name: null })).json().name).toBeNull();
      expect((await as(bossToken.token, 'PATCH', `/admin/admins/${target.id}`, { role: 'god' })).statusCode).toBe(422);

      const entries = await auditOf(boss.id);
      // Newest first, each saying what it changed, from what to what.
      expect(entries.map((e) => [e.action, e.targetType, e.targetId, e.changes])).toEqual([
        ['admin.updated', 'admin', target.id, { name: { from: 'Grace', to: null } }],
        ['admin.updated', 'admin', target.id, { role: { from: 'viewer', to: 'operator' }, name: { from: null, to: 'Grace' } }],
      ]);
      expect(entries[0]).toMatchObject({ actor: { type: 'token', adminId: boss.id, email: boss.email }, remoteAddress: '198.51.100.4' });

      await bootstrap('PATCH', `/admin/admins/${target.id}`, { disabled: true });
      const [disabled] = await auditOf(null);
      expect(disabled).toMatchObject({ action: 'admin.updated', targetId: target.id, changes: { disabled: { from: false, to: true } } });
      // Entries whose action says it all carry no changes.
      expect((await auditOf(null)).find((e) => e.action === 'admin.created' && e.targetId === target.id)).toMatchObject({ changes: null });
    });
  });

  describe('personal tokens', () => {
    it('are shown once with Cache-Control: no-store, stored only as a hash, and answer GET /admin/me with their admin', async () => {
      const viewer = await newAdmin('viewer', 'Val');
      const res = await bootstrap('POST', `/admin/admins/${viewer.id}/tokens`, { name: 'laptop' });
      expect(res.statusCode).toBe(201);
      expect(res.headers['cache-control']).toBe('no-store');
      const issued = res.json();
      expect(issued.token).toMatch(/^adm_tax_[0-9A-Za-z]{32,}$/);
      expect(issued).toEqual({
        id: expect.any(String),
        adminId: viewer.id,
        name: 'laptop',
        prefix: issued.token.slice(0, 12),
        last4: issued.token.slice(-4),
        createdAt: expect.any(String),
        expiresAt: null,
        revokedAt: null,
        lastUsedAt: null,
        token: issued.token,
      });
      const stored = JSON.stringify((await t.db.query('SELECT * FROM admin_tokens WHERE id = $1', [issued.id])).rows);
      expect(stored).not.toContain(issued.token);
      expect(stored).not.toContain(issued.token.slice(12, -4));

      const me = await as(issued.token, 'GET', '/admin/me');
      expect(me.statusCode).toBe(200);
      expect(me.json()).toEqual({ actor: { type: 'token', adminId: viewer.id, email: viewer.email }, role: 'viewer' });
      expect((await bootstrap('GET', '/admin/me')).json()).toEqual({ actor: { type: 'bootstrap', adminId: null, email: null }, role: 'admin' });

      const listed = (await bootstrap('GET', `/admin/admins/${viewer.id}/tokens`)).json().data;
      expect(listed).toEqual([{ ...issued, token: undefined, lastUsedAt: expect.any(String) }].map(({ token: _t, ...rest }) => rest));
      expect(JSON.stringify(listed)).not.toContain(issued.token);
      expect((await bootstrap('GET', `/admin/admins/${viewer.id}`)).json().lastSeenAt).not.toBeNull();
    });

    it('are issued by an admin for anyone, by anyone else only for themself; each refusal is a 403 that changes nothing', async () => {
      const viewer = await newAdmin('viewer');
      const colleague = await newAdmin('operator');
      const own = await tokenFor(viewer);
      const tokensBefore = await count('admin_tokens');

      const forOther = await as(own.token, 'POST', `/admin/admins/${colleague.id}/tokens`, {});
      expect(forOther.statusCode).toBe(403);
      expect(forOther.json().code).toBe('FORBIDDEN');
      expect(await count('admin_tokens')).toBe(tokensBefore);

      const second = await as(own.token, 'POST', `/admin/admins/${viewer.id}/tokens`, { expiresAt: new Date(Date.now() + 3600_000).toISOString() });
      expect(second.statusCode).toBe(201);
      const colleagueToken = await tokenFor(colleague);
      expect((await as(own.token, 'POST', `/admin/admin-tokens/${colleagueToken.id}/revoke`)).statusCode).toBe(403);
      const revoked = await as(own.token, 'POST', `/admin/admin-tokens/${second.json().id}/revoke`);
      expect(revoked.statusCode).toBe(200);
      expect(revoked.json().revokedAt).not.toBeNull();
      expect((await as(second.json().token, 'GET', '/admin/me')).statusCode).toBe(401);
      expect((await bootstrap('POST', `/admin/admins/${viewer.id}/tokens`, { expiresAt: '2001-01-01T00:00:00Z' })).statusCode).toBe(422);
    });

    it('never outlive the token that makes them: one expiring in 90 s cannot make a longer-lived one, for its admin or another', async () => {
      const boss = await newAdmin('admin');
      const colleague = await newAdmin('viewer');
      const expiresAt = new Date(Date.now() + 90_000).toISOString();
      const shortLived = (await bootstrap('POST', `/admin/admins/${boss.id}/tokens`, { expiresAt })).json<Token & { expiresAt: string }>();
      const tokensBefore = await count('admin_tokens');
      const later = new Date(Date.parse(shortLived.expiresAt) + 1000).toISOString();
      for (const [adminId, body] of [
        [boss.id, {}],
        [boss.id, { expiresAt: later }],
        [colleague.id, { expiresAt: '2099-01-01T00:00:00Z' }],
      ] as const) {
        const refused = await as(shortLived.token, 'POST', `/admin/admins/${adminId}/tokens`, body);
        expect({ body, status: refused.statusCode, code: refused.json().code, errors: refused.json().errors }).toEqual({
          body,
          status: 422,
          code: 'VALIDATION_ERROR',
          errors: [{ field: 'expiresAt', message: `must be at most ${shortLived.expiresAt}, when the token making this request expires` }],
        });
      }
      expect(await count('admin_tokens')).toBe(tokensBefore);

      const within = await as(shortLived.token, 'POST', `/admin/admins/${colleague.id}/tokens`, { expiresAt: shortLived.expiresAt });
      expect(within.statusCode).toBe(201);
      expect(within.json().expiresAt).toBe(shortLived.expiresAt);
      // A token that never expires and the break-glass token are not bound by this rule (a console session is, by ADMIN_TOKEN_MAX_TTL: below).
      const lasting = await tokenFor(boss);
      expect((await as(lasting.token, 'POST', `/admin/admins/${colleague.id}/tokens`, {})).json().expiresAt).toBeNull();
    });

    it('made in a console session, expire within ADMIN_TOKEN_MAX_TTL (P90D): without expiresAt or later is a 422 naming expiresAt', async () => {
      const boss = await newAdmin('admin');
      // A session as the sign-in's callback writes it; its cookie is the token whose hash is stored.
      const cookieToken = `tdgs_${randomBytes(32).toString('base64url')}`;
      const csrfToken = randomBytes(32).toString('base64url');
      await t.db.query(`INSERT INTO admin_sessions (admin_id, token_hash, csrf_token, expires_at) VALUES ($1, $2, $3, now() + interval '8 hours')`, [
        boss.id,
        createHash('sha256').update(cookieToken).digest('hex'),
        csrfToken,
      ]);
      const inSession = (method: Method, url: string, payload?: object) =>
        t.app.inject({
          method,
          url,
          headers: { cookie: `tdg_admin_session=${cookieToken}`, 'x-csrf-token': csrfToken },
          payload,
          remoteAddress: '198.51.100.9',
        });
      const asked = Date.now();
      const me = (await inSession('GET', '/admin/me')).json();
      expect(me).toMatchObject({ actor: { type: 'session', adminId: boss.id }, csrfToken, tokensExpireBy: expect.any(String) });
      const ceiling = Date.parse(me.tokensExpireBy);
      expect(ceiling - asked).toBeGreaterThanOrEqual(90 * 86400_000 - 1000);
      expect(ceiling - Date.now()).toBeLessThanOrEqual(90 * 86400_000);

      const tokensBefore = await count('admin_tokens');
      const day = 86400_000;
      for (const body of [{}, { name: 'forever' }, { expiresAt: new Date(Date.now() + 91 * day).toISOString() }, { expiresAt: '2099-01-01T00:00:00Z' }]) {
        const refused = await inSession('POST', `/admin/admins/${boss.id}/tokens`, body);
        expect({ body, status: refused.statusCode, code: refused.json().code, errors: refused.json().errors }).toEqual({
          body,
          status: 422,
          code: 'VALIDATION_ERROR',
          errors: [
            {
              field: 'expiresAt',
              message: expect.stringMatching(/^is required in a console session, at most \d{4}-\d\d-\d\dT[\d:.]+Z \(ADMIN_TOKEN_MAX_TTL from now\)$/),
            },
          ],
        });
      }
      expect(await count('admin_tokens')).toBe(tokensBefore);
      const expiresAt = new Date(Date.now() + 89 * day).toISOString();
      const made = await inSession('POST', `/admin/admins/${boss.id}/tokens`, { expiresAt });
      expect([made.statusCode, made.json().expiresAt]).toEqual([201, expiresAt]);
      // The same admin with the break-glass token, or a token that never expires, is not bound by it.
      expect((await bootstrap('POST', `/admin/admins/${boss.id}/tokens`, {})).json().expiresAt).toBeNull();
    });

    it('made with a shorter ADMIN_TOKEN_MAX_TTL, are bound by it', async () => {
      const short = await startTestApp({ env: { ...ENV, ADMIN_TOKEN_MAX_TTL: 'PT2H' }, databaseUrl: t.databaseUrl });
      try {
        const boss = await newAdmin('admin');
        const cookieToken = `tdgs_${randomBytes(32).toString('base64url')}`;
        const csrfToken = randomBytes(32).toString('base64url');
        await t.db.query(`INSERT INTO admin_sessions (admin_id, token_hash, csrf_token, expires_at) VALUES ($1, $2, $3, now() + interval '8 hours')`, [
          boss.id,
          createHash('sha256').update(cookieToken).digest('hex'),
          csrfToken,
        ]);
        const headers = { cookie: `tdg_admin_session=${cookieToken}`, 'x-csrf-token': csrfToken };
        const issue = (expiresAt: string) => short.app.inject({ method: 'POST', url: `/admin/admins/${boss.id}/tokens`, headers, payload: { expiresAt } });
        expect((await issue(new Date(Date.now() + 3 * 3600_000).toISOString())).statusCode).toBe(422);
        expect((await issue(new Date(Date.now() + 3600_000).toISOString())).statusCode).toBe(201);
      } finally {
        await short.close();
      }
    });

    it('stop on the very next request on every instance when revoked, or when their admin is disabled', async () => {
      const operator = await newAdmin('operator');
      const first = await tokenFor(operator);
      const second = await tokenFor(operator);
      expect((await as(first.token, 'GET', '/admin/me', undefined, other)).statusCode).toBe(200);

      expect((await bootstrap('POST', `/admin/admin-tokens/${first.id}/revoke`)).statusCode).toBe(200);
      const afterRevoke = await as(first.token, 'GET', '/admin/me', undefined, other);
      expect(afterRevoke.statusCode).toBe(401);
      expect(afterRevoke.json().code).toBe('UNAUTHORIZED');
      expect((await as(second.token, 'GET', '/admin/me', undefined, other)).statusCode).toBe(200);

      const disabled = await other.app.inject({ method: 'PATCH', url: `/admin/admins/${operator.id}`, headers: adminHeaders, payload: { disabled: true } });
      expect(disabled.json().disabledAt).not.toBeNull();
      expect((await as(second.token, 'GET', '/admin/me')).statusCode).toBe(401);
      expect((await bootstrap('POST', `/admin/admins/${operator.id}/tokens`, {})).statusCode).toBe(409);

      await bootstrap('PATCH', `/admin/admins/${operator.id}`, { disabled: false });
      expect((await as(second.token, 'GET', '/admin/me', undefined, other)).statusCode).toBe(200);
    });
  });

  describe('roles', () => {
    it('let a viewer read everything and refuse each write with 403 FORBIDDEN, changing nothing and auditing nothing', async () => {
      const viewer = await newAdmin('viewer');
      const { token } = await tokenFor(viewer);
      const key = await newSourceWithKey(t.app);
      for (const url of [
        '/admin/api-keys',
        '/admin/admins',
        '/admin/audit-log',
        '/admin/webhook-events',
        '/admin/webhook-endpoints',
        '/admin/outbound-deliveries',
        `/admin/documents?source=${key.source}`,
        '/admin/stats/outbound-deliveries',
        '/admin/stats/webhook-events',
      ]) {
        expect([url, (await as(token, 'GET', url)).statusCode]).toEqual([url, 200]);
      }
      const before = await inSequence(['api_keys', 'admins', 'admin_audit_log', 'webhook_endpoints'], count);
      const writes: Array<[Method, string, object?]> = [
        ['POST', '/admin/api-keys', { source: uniqueSource() }],
        ['POST', `/admin/api-keys/${key.id}/revoke`],
        ['POST', `/admin/api-keys/${key.id}/rotate`, {}],
        ['POST', '/admin/admins', { email: 'mallory@example.com', role: 'admin' }],
        ['PATCH', `/admin/admins/${viewer.id}`, { role: 'admin' }],
        ['PATCH', '/admin/webhook-endpoints/00000000-0000-4000-8000-000000000000', { enabled: false }],
        ['POST', '/admin/outbound-deliveries/1/retry'],
        ['POST', '/admin/webhook-events/evt_1/apply', { documentId: '00000000-0000-4000-8000-000000000000' }],
      ];
      for (const [method, url, payload] of writes) {
        const res = await as(token, method, url, payload);
        expect([method, url, res.statusCode, res.json().code]).toEqual([method, url, 403, 'FORBIDDEN']);
        expect(res.headers['content-type']).toContain('application/problem+json');
      }
      expect(await inSequence(['api_keys', 'admins', 'admin_audit_log', 'webhook_endpoints'], count)).toEqual(before);
      expect((await as(token, 'GET', `/admin/api-keys/${key.id}`)).json().status).toBe('ACTIVE');
    });

    it("let an operator stop and resume a client's endpoint (which the client cannot undo) and retry deliveries, but not manage keys", async () => {
      const operator = await newAdmin('operator');
      const { token } = await tokenFor(operator);
      const key = await newSourceWithKey(t.app);
      expect((await as(token, 'POST', '/admin/api-keys', { source: key.source })).statusCode).toBe(403);

      const endpoint = await registerEndpoint(key);
      // The same URL registered twice beforehand: the stop reaches both.
      const twin = await registerEndpoint(key);
      const stopped = await as(token, 'PATCH', `/admin/webhook-endpoints/${endpoint.id}`, { enabled: false });
      expect(stopped.statusCode).toBe(200);
      expect(stopped.json()).toMatchObject({ id: endpoint.id, source: key.source, enabled: false, disabledReason: 'admin' });
      expect(JSON.stringify(stopped.json())).not.toContain(endpoint.secret);

      const client = (method: 'GET' | 'PATCH', payload?: object, id = endpoint.id) =>
        t.app.inject({ method, url: `/api/v1/webhook-endpoints/${id}`, headers: { 'x-api-key': key.key }, payload });
      expect((await client('GET')).json()).toMatchObject({ enabled: false, disabledReason: 'admin' });
      expect((await client('GET', undefined, twin.id)).json()).toMatchObject({ enabled: false, disabledReason: 'admin' });
      const clientTry = await client('PATCH', { enabled: true });
      expect(clientTry.statusCode).toBe(409);
      expect(clientTry.json().code).toBe('INVALID_STATE_TRANSITION');
      expect((await client('PATCH', { description: 'still editable' })).statusCode).toBe(200);
      expect((await client('GET')).json()).toMatchObject({ enabled: false, disabledReason: 'admin', description: 'still editable' });

      // Nor round it: the stop holds for the source and the URL, through a delete, a new registration or a move.
      const endpointsBefore = await count('webhook_endpoints');
      const apiCall = (method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
        t.app.inject({ method, url, headers: { 'x-api-key': key.key, 'x-idempotency-key': newIdempotencyKey() }, payload });
      const other = await apiCall('POST', '/api/v1/webhook-endpoints', { url: `${receiver.url}/other` });
      expect(other.statusCode).toBe(201);
      for (const [method, url, payload] of [
        ['DELETE', `/api/v1/webhook-endpoints/${endpoint.id}`],
        ['POST', '/api/v1/webhook-endpoints', { url: receiver.url }],
        ['PATCH', `/api/v1/webhook-endpoints/${other.json().id}`, { url: receiver.url }],
        ['PATCH', `/api/v1/webhook-endpoints/${endpoint.id}`, { url: `${receiver.url}/elsewhere` }],
      ] as const) {
        const refused = await apiCall(method, url, payload);
        expect([method, url, refused.statusCode, refused.json().code, refused.json().detail]).toEqual([
          method,
          url,
          409,
          'INVALID_STATE_TRANSITION',
          expect.stringMatching(/^The gateway operator stopped pushes to this URL for this source; only they can lift the stop/),
        ]);
      }
      expect(await count('webhook_endpoints')).toBe(endpointsBefore + 1);
      expect((await client('GET')).json()).toMatchObject({ enabled: false, disabledReason: 'admin', url: receiver.url });
      expect((await apiCall('DELETE', `/api/v1/webhook-endpoints/${other.json().id}`)).statusCode).toBe(204);

      const resumed = await as(token, 'PATCH', `/admin/webhook-endpoints/${endpoint.id}`, { enabled: true });
      expect(resumed.json()).toMatchObject({ enabled: true, disabledReason: null });
      expect((await client('GET', undefined, twin.id)).json()).toMatchObject({ enabled: true, disabledReason: null });
      expect((await apiCall('DELETE', `/api/v1/webhook-endpoints/${twin.id}`)).statusCode).toBe(204);
      expect((await as(token, 'PATCH', `/admin/webhook-endpoints/${endpoint.id}`, { enabled: 'no' })).statusCode).toBe(422);
      expect((await as(token, 'PATCH', '/admin/webhook-endpoints/00000000-0000-4000-8000-000000000000', { enabled: false })).statusCode).toBe(404);

      const document = await createDocument(key);
      const failing = await waitFor(async () => {
        const page = (await as(token, 'GET', `/admin/outbound-deliveries?attention=true&source=${key.source}`)).json();
        return page.data[0];
      }, 'a delivery that is failing right now');
      expect(failing).toMatchObject({ status: 'pending', eventType: 'document.created', documentId: document.id, source: key.source, endpointId: endpoint.id });
      expect(failing.attempts).toBeGreaterThan(0);
      const retried = await as(token, 'POST', `/admin/outbound-deliveries/${failing.id}/retry`);
      expect(retried.statusCode).toBe(202);
      expect(retried.json()).toMatchObject({ id: failing.id, documentId: document.id });

      const entries = await auditOf(operator.id);
      expect(entries.map((e) => [e.action, e.targetType, e.targetId, e.source])).toEqual([
        ['outbound_delivery.retried', 'outbound_delivery', failing.id, key.source],
        ['webhook_endpoint.enabled', 'webhook_endpoint', endpoint.id, key.source],
        ['webhook_endpoint.disabled', 'webhook_endpoint', endpoint.id, key.source],
      ]);
    });
  });

  describe('the audit log', () => {
    it('names the actor of every entry and pages through all of them, newest first, by action or by admin', async () => {
      const boss = await newAdmin('admin');
      const { token } = await tokenFor(boss);
      const source = uniqueSource('audited');
      for (let i = 0; i < 5; i++) expect((await as(token, 'POST', '/admin/api-keys', { source, name: `k${i}` })).statusCode).toBe(201);

      const pages: Array<Array<Record<string, unknown>>> = [];
      let cursor: string | null = null;
      do {
        const res = await bootstrap('GET', `/admin/audit-log?adminId=${boss.id}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(res.statusCode).toBe(200);
        pages.push(res.json().data);
        cursor = res.json().nextCursor;
      } while (cursor);
      expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
      const entries = pages.flat();
      expect(entries.every((e) => e.action === 'api_key.created' && e.source === source)).toBe(true);
      expect(entries.map((e) => Number(e.id))).toEqual([...entries.map((e) => Number(e.id))].sort((a, b) => b - a));
      expect(entries[0]).toEqual({
        id: expect.any(String),
        action: 'api_key.created',
        actor: { type: 'token', adminId: boss.id, email: boss.email },
        targetType: 'api_key',
        targetId: expect.any(String),
        keyId: entries[0].targetId,
        source,
        remoteAddress: '198.51.100.4',
        changes: null,
        createdAt: expect.any(String),
      });

      const created = (await bootstrap('GET', '/admin/audit-log?action=admin.created&limit=200')).json().data;
      expect(created.length).toBeGreaterThan(0);
      expect(created.every((e: { action: string }) => e.action === 'admin.created')).toBe(true);
      expect(created.find((e: { targetId: string }) => e.targetId === boss.id)).toMatchObject({ actor: { type: 'bootstrap', adminId: null, email: null } });
      for (const query of ['action=nope', 'adminId=1', 'cursor=xyz', 'limit=201'])
        expect((await bootstrap('GET', `/admin/audit-log?${query}`)).statusCode).toBe(422);
    });
  });

  describe("operators' views", () => {
    it('page every list with limit and cursor, and filter keys, endpoints and deliveries by source', async () => {
      const key = await newSourceWithKey(t.app);
      for (let i = 0; i < 2; i++) await bootstrap('POST', '/admin/api-keys', { source: key.source });
      for (let i = 0; i < 3; i++) await registerEndpoint(key);
      for (const list of ['/admin/api-keys', '/admin/webhook-endpoints']) {
        const first = (await bootstrap('GET', `${list}?source=${key.source}&limit=2`)).json();
        expect([list, first.data.length, typeof first.nextCursor]).toEqual([list, 2, 'string']);
        const rest = (await bootstrap('GET', `${list}?source=${key.source}&limit=2&cursor=${first.nextCursor}`)).json();
        const ids = [...first.data, ...rest.data].map((row: { id: string; source: string }) => row.id);
        expect(new Set(ids).size).toBe(ids.length);
        expect([...first.data, ...rest.data].every((row: { source: string }) => row.source === key.source)).toBe(true);
        expect((await bootstrap('GET', `${list}?cursor=${first.nextCursor}x`)).statusCode).toBe(422);
      }
      for (const list of ['/admin/webhook-events', '/admin/outbound-deliveries', '/admin/admins', '/admin/audit-log']) {
        const page = (await bootstrap('GET', `${list}?limit=1`)).json();
        expect([list, Object.keys(page).sort()]).toEqual([list, ['data', 'nextCursor']]);
      }
    });

    it("show a source's documents, one by providerReference across sources, and a document with its events and deliveries (read-only)", async () => {
      const key = await newSourceWithKey(t.app);
      const endpoint = await registerEndpoint(key);
      const reference = `PAY-${uniqueSource('ref')}`;
      const document = await createDocument(key, { providerReference: reference });
      await createDocument(key);

      expect((await bootstrap('GET', '/admin/documents')).statusCode).toBe(422);
      const bySource = (await bootstrap('GET', `/admin/documents?source=${key.source}&limit=1`)).json();
      expect(bySource.data).toHaveLength(1);
      expect(bySource.nextCursor).toEqual(expect.any(String));
      const byReference = (await bootstrap('GET', `/admin/documents?providerReference=${reference}`)).json();
      expect(byReference.data.map((d: { id: string }) => d.id)).toEqual([document.id]);

      await waitFor(async () => (await bootstrap('GET', `/admin/documents/${document.id}`)).json().deliveries[0]?.attempts > 0, 'the first attempt');
      const detail = (await bootstrap('GET', `/admin/documents/${document.id}`)).json();
      expect(detail.document).toMatchObject({ id: document.id, source: key.source, providerReference: reference, status: 'PENDING_PAYMENT' });
      expect(detail.events).toEqual([expect.objectContaining({ type: 'document.created', documentId: document.id, previousStatus: null })]);
      expect(detail.deliveries).toEqual([expect.objectContaining({ endpointId: endpoint.id, documentId: document.id, eventId: detail.events[0].id })]);
      expect(detail.deliveriesNextCursor).toBeNull();
      const ofDocument = (await bootstrap('GET', `/admin/outbound-deliveries?documentId=${document.id}`)).json().data;
      expect(ofDocument.map((d: { id: string }) => d.id)).toEqual(detail.deliveries.map((d: { id: string }) => d.id));
      expect((await bootstrap('GET', '/admin/documents/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
    });

    it('count push attempts and bank events per bucket for the charts', async () => {
      await waitFor(async () => receiver.messages.length > 0, 'a push attempt');
      const deliveries = (await bootstrap('GET', '/admin/stats/outbound-deliveries?hours=1')).json();
      expect(deliveries.bucketMinutes).toBe(1);
      expect(deliveries.data.reduce((sum: number, b: { retried: number; failed: number }) => sum + b.retried + b.failed, 0)).toBeGreaterThan(0);
      expect(deliveries.data[0]).toEqual({ at: expect.any(String), succeeded: expect.any(Number), retried: expect.any(Number), failed: expect.any(Number) });
      expect((await bootstrap('GET', '/admin/stats/webhook-events?hours=24')).json()).toEqual({ bucketMinutes: 8, data: expect.any(Array) });
      expect((await bootstrap('GET', '/admin/stats/webhook-events?hours=49')).statusCode).toBe(422);
    });
  });

  async function registerEndpoint(key: IssuedKey): Promise<{ id: string; secret: string }> {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhook-endpoints',
      headers: { 'x-api-key': key.key, 'x-idempotency-key': newIdempotencyKey() },
      payload: { url: receiver.url },
    });
    expect(res.statusCode).toBe(201);
    return res.json();
  }

  async function createDocument(key: IssuedKey, overrides: Record<string, unknown> = {}): Promise<{ id: string }> {
    const res = await postDocument(t.app, key.key, documentBody(key.source, overrides));
    expect(res.statusCode).toBe(201);
    return res.json();
  }
});

import { mkdtemp, rm } from 'node:fs/promises';
import { IncomingHttpHeaders, request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser, BrowserContext, chromium, Page } from 'playwright-core';
import { Client } from 'pg';
import { BROWSER_TIMEOUT_MS, describeWithBrowser, requireChromium, screenshotPath } from '../support/browser.js';
import { createTestDatabase, dropTestDatabase } from '../support/database.js';
import { spawnNode, Spawned, startGateway, waitFor } from '../support/processes.js';

const ADMIN_TOKEN = 'sso-test-admin-token-0123456789abcdef';
const BANK_WEBHOOK_SECRET = 'sso-test-bank-webhook-secret-0123456789';
const CLIENT_ID = 'tax-document-gateway';
const CLIENT_SECRET = 'a-client-secret-for-the-test-provider-0123456789';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Console sign-in by OpenID Connect against a real provider (`oidc-provider`, started by the
 * test at http://localhost:…) and the built gateway as a process at http://127.0.0.1:…, so the provider and
 * the console are different sites as they are in production, through a real Chromium.
 */
describeWithBrowser('admin single sign-on')('console single sign-on', () => {
  let provider: Spawned;
  let gateway: Spawned;
  let databaseUrl: string;
  let db: Client;
  let baseUrl: string;
  let issuer: string;
  let browser: Browser;
  let userDataDir: string;

  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: res.status === 204 ? null : await res.json() };
  };
  const newAdmin = async (email: string, role: string) => {
    const res = await admin('POST', '/admin/admins', { email, role });
    expect(res.status).toBe(201);
    return res.body as { id: string; email: string };
  };
  const auditEntries = async (action: string) =>
    (await admin('GET', `/admin/audit-log?action=${action}&limit=200`)).body.data as Array<Record<string, unknown>>;

  /**
   * A browser of its own (no cookies) that signs in at the provider as `login`. `landedOn` is where the
   * gateway's callback sent it (the console then tidies its address bar).
   */
  const signIn = async (login: string): Promise<{ context: BrowserContext; page: Page; landedOn: string }> => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(BROWSER_TIMEOUT_MS);
    const page = await context.newPage();
    let landedOn = '';
    page.on('response', (response) => {
      if (response.url().startsWith(`${baseUrl}/admin/auth/callback`)) landedOn = new URL(response.headers().location ?? '', baseUrl).href;
    });
    // As a person would: the console's own single sign-on link.
    await page.goto(`${baseUrl}/admin`);
    await page.click('#sso-link');
    await page.waitForURL(/localhost:\d+\/interaction\//);
    await page.fill('input[name="login"]', login);
    await page.fill('input[name="password"]', 'any password');
    await page.click('button[type="submit"]');
    await page.waitForURL(new RegExp(`^${baseUrl}/admin`));
    await waitFor(async () => landedOn, 'the callback to answer');
    return { context, page, landedOn };
  };
  /** GET /admin/me as the page itself asks it: same origin, the session cookie sent by the browser. */
  const meFrom = (page: Page) =>
    page.evaluate(async () => {
      const res = await fetch('/admin/me');
      return { status: res.status, body: await res.json() };
    });
  const sessionCookie = async (context: BrowserContext) => (await context.cookies()).find((c) => c.name === 'tdg_admin_session');

  beforeAll(async () => {
    const executablePath = requireChromium('admin single sign-on');
    const [gatewayPort, providerPort] = [await freePort(), await freePort()];
    baseUrl = `http://127.0.0.1:${gatewayPort}`;
    provider = spawnNode(['scripts/local-oidc-provider.mjs', String(providerPort), CLIENT_ID, CLIENT_SECRET, `${baseUrl}/admin/auth/callback`]);
    issuer = await waitFor(async () => /READY (\S+)/.exec(provider.output())?.[1] ?? (provider.child.exitCode !== null && 'exited'), 'the OpenID provider');
    if (issuer === 'exited') throw new Error(`the OpenID provider did not start: ${provider.output()}`);

    databaseUrl = await createTestDatabase();
    db = new Client({ connectionString: databaseUrl });
    gateway = startGateway({
      DATABASE_URL: databaseUrl,
      PORT: String(gatewayPort),
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      BANK_WEBHOOK_SECRET,
      OIDC_ISSUER_URL: issuer,
      OIDC_CLIENT_ID: CLIENT_ID,
      OIDC_CLIENT_SECRET: CLIENT_SECRET,
    });
    await waitFor(
      async () => (await fetch(`${baseUrl}/health/ready`)).ok || (gateway.child.exitCode !== null && Promise.reject(new Error(gateway.output()))),
      'the gateway',
    );
    await db.connect();
    userDataDir = await mkdtemp(join(tmpdir(), 'admin-sso-chromium-'));
    browser = await chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS, timeout: BROWSER_TIMEOUT_MS });
  });

  afterAll(async () => {
    await browser?.close();
    await db?.end();
    for (const child of [gateway, provider]) {
      if (child && child.child.exitCode === null) child.child.kill('SIGTERM');
      await child?.exited;
    }
    if (databaseUrl) await dropTestDatabase(databaseUrl);
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
  });

  it('says whether the console offers single sign-on', async () => {
    expect(await (await fetch(`${baseUrl}/admin/auth/config`)).json()).toEqual({ sso: true });
  });

  it('signs an enabled admin in with a session cookie that is HttpOnly, SameSite=Strict, for /admin only, and audits it', async () => {
    const ada = await newAdmin(`ada.${Date.now()}@example.com`, 'admin');
    const { context, page, landedOn } = await signIn(ada.email);
    try {
      expect(landedOn).toBe(`${baseUrl}/admin`);
      // The console shows who signed in.
      await page.getByText(ada.email).first().waitFor();
      await page.screenshot({ path: screenshotPath('sso-signed-in.png'), fullPage: true });
      const cookie = await sessionCookie(context);
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/admin', secure: false });
      // The console is on loopback over plain HTTP: elsewhere the cookie is Secure (see the unit test of sessionCookie).
      expect(cookie!.expires - Date.now() / 1000).toBeGreaterThan(28800 - 60);
      expect(cookie!.value).not.toContain(ada.email);
      const stored = JSON.stringify((await db.query('SELECT * FROM admin_sessions')).rows);
      expect(stored).not.toContain(cookie!.value);

      const me = await meFrom(page);
      expect(me).toEqual({
        status: 200,
        body: {
          actor: { type: 'session', adminId: ada.id, email: ada.email },
          role: 'admin',
          csrfToken: expect.any(String),
          tokensExpireBy: expect.any(String),
        },
      });
      // A token issued in this session must expire within ADMIN_TOKEN_MAX_TTL: the form says so, and one without an expiry is refused.
      await page.getByTestId('nav-my-tokens').click();
      const panel = page.getByTestId('token-panel');
      const hint = panel.getByTestId('token-expires-hint');
      await hint.waitFor();
      expect(await hint.textContent()).toMatch(
        /^In your local time\. Required: at most .+ \(ADMIN_TOKEN_MAX_TTL from now: a token issued in a console session always expires\)\.$/,
      );
      // The console's own /admin/me, asked when it loaded: ADMIN_TOKEN_MAX_TTL (P90D) from then.
      const shownBy = Date.parse((await hint.locator('time').getAttribute('datetime')) ?? '');
      expect(Math.abs(shownBy - Date.parse(me.body.tokensExpireBy as string))).toBeLessThan(10 * 60_000);
      await panel.getByRole('button', { name: 'Issue token' }).click();
      const error = panel.getByTestId('token-error');
      await error.waitFor();
      expect(await error.locator('li[data-field="expiresAt"]').textContent()).toMatch(
        /^Expires: is required in a console session, at most .+ \(ADMIN_TOKEN_MAX_TTL from now\)$/,
      );
      const signedIn = (await auditEntries('admin.signed_in')).find((e) => (e.actor as { adminId: string }).adminId === ada.id);
      expect(signedIn).toMatchObject({
        actor: { type: 'session', adminId: ada.id, email: ada.email },
        targetType: 'admin_session',
        remoteAddress: '127.0.0.1',
      });
    } finally {
      await context.close();
    }
  });

  it('accepts a cookie-authenticated write from the console (same origin, or its CSRF token) and refuses it from anywhere else', async () => {
    const grace = await newAdmin(`grace.${Date.now()}@example.com`, 'admin');
    const { context, page } = await signIn(grace.email);
    try {
      const keys = async () => Number((await db.query('SELECT count(*) FROM api_keys')).rows[0].count);
      const cookie = `tdg_admin_session=${(await sessionCookie(context))!.value}`;
      const csrfToken = (await meFrom(page)).body.csrfToken as string;
      const post = (headers: Record<string, string>) =>
        fetch(`${baseUrl}/admin/api-keys`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ source: 'csrf-test' }),
        });

      // The cookie sent by another site's page or form (its own Origin), or by a script with no Origin at all.
      const before = await keys();
      for (const headers of [{ origin: 'https://evil.example' }, {}, { 'x-csrf-token': 'not-the-token' }, { origin: 'null' }] as Array<
        Record<string, string>
      >) {
        const refused = await post(headers);
        expect([JSON.stringify(headers), refused.status, (await refused.json()).code]).toEqual([JSON.stringify(headers), 403, 'FORBIDDEN']);
      }
      expect(await keys()).toBe(before);

      expect((await post({ 'x-csrf-token': csrfToken })).status).toBe(201);
      // The console's own page: the browser names its origin.
      const fromPage = await page.evaluate(async () => {
        const res = await fetch('/admin/api-keys', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ source: 'csrf-test' }),
        });
        return { status: res.status, body: await res.json() };
      });
      expect(fromPage.status).toBe(201);
      const created = (await auditEntries('api_key.created')).find((e) => e.targetId === fromPage.body.id);
      expect(created).toMatchObject({ actor: { type: 'session', adminId: grace.id, email: grace.email } });
      expect(await keys()).toBe(before + 2);
    } finally {
      await context.close();
    }
  });

  it('refuses an email that belongs to no admin, and an unverified one, without a session', async () => {
    for (const email of [`nobody.${Date.now()}@example.com`, `unverified.${Date.now()}@example.com`]) {
      if (email.startsWith('unverified.')) await newAdmin(email, 'admin');
      const { context, page, landedOn } = await signIn(email);
      try {
        expect(landedOn).toBe(`${baseUrl}/admin?signin=refused`);
        await page.getByText('Single sign-on did not sign you in').waitFor();
        expect(await sessionCookie(context)).toBeUndefined();
        expect((await meFrom(page)).status).toBe(401);
        expect((await auditEntries('admin.sign_in_refused')).find((e) => (e.actor as { email: string }).email === email)).toMatchObject({
          actor: { type: 'session', adminId: null, email },
        });
      } finally {
        await context.close();
      }
    }
    await (async () => {
      const { context, page } = await signIn(`nobody.${Date.now()}@example.com`);
      await page.screenshot({ path: screenshotPath('sso-refused.png'), fullPage: true });
      await context.close();
    })();
  });

  it('ends the session of an admin who is disabled, on the next request', async () => {
    const val = await newAdmin(`val.${Date.now()}@example.com`, 'viewer');
    const { context, page } = await signIn(val.email);
    try {
      expect((await meFrom(page)).body.role).toBe('viewer');
      expect((await admin('PATCH', `/admin/admins/${val.id}`, { disabled: true })).status).toBe(200);
      expect((await meFrom(page)).status).toBe(401);
      // Enabling the account again does not bring the session back: the admin signs in anew.
      await admin('PATCH', `/admin/admins/${val.id}`, { disabled: false });
      expect((await meFrom(page)).status).toBe(401);
    } finally {
      await context.close();
    }
  });

  it('ends a session after ADMIN_SESSION_IDLE_SECONDS without a request, and after ADMIN_SESSION_MAX_SECONDS in any case', async () => {
    const lin = await newAdmin(`lin.${Date.now()}@example.com`, 'viewer');
    for (const expire of [
      // Idle: the last request was 31 minutes ago (the default idle timeout is 30).
      `UPDATE admin_sessions SET last_seen_at = now() - interval '31 minutes' WHERE admin_id = $1`,
      // Absolute: in use all along, but signed in longer ago than ADMIN_SESSION_MAX_SECONDS.
      `UPDATE admin_sessions SET expires_at = now() - interval '1 second' WHERE admin_id = $1`,
    ]) {
      const { context, page } = await signIn(lin.email);
      try {
        expect((await meFrom(page)).status).toBe(200);
        await db.query(expire, [lin.id]);
        expect((await meFrom(page)).status).toBe(401);
      } finally {
        await context.close();
      }
    }
  });

  it("refuses a callback whose state was tampered with, or that this browser did not start (a login forged for someone else's account)", async () => {
    const kim = await newAdmin(`kim.${Date.now()}@example.com`, 'admin');
    const context = await browser.newContext();
    context.setDefaultTimeout(BROWSER_TIMEOUT_MS);
    try {
      const page = await context.newPage();
      // The provider's answer to the sign-in form redirects twice, the second time to the gateway's callback;
      // a route sees only the first request of a redirect chain, so the hops are followed here by hand and
      // the browser is stopped before the callback, whose code and state are kept.
      let callback = '';
      await page.route('**/interaction/*', async (route) => {
        if (route.request().method() !== 'POST') return route.continue();
        const resume = (await route.fetch({ maxRedirects: 0 })).headers().location;
        const back = await context.request.get(new URL(resume, route.request().url()).href, { maxRedirects: 0 });
        callback = back.headers().location;
        await route.fulfill({ status: 200, contentType: 'text/plain', body: 'stopped before the callback' });
      });
      await page.goto(`${baseUrl}/admin/auth/login`);
      await page.fill('input[name="login"]', kim.email);
      await page.fill('input[name="password"]', 'any password');
      await page.click('button[type="submit"]');
      await waitFor(async () => callback, 'the provider to send the browser back');
      expect(callback).toMatch(new RegExp(`^${baseUrl}/admin/auth/callback\\?code=`));

      // The code and state as the provider issued them, opened in a browser that never started this sign-in.
      const attacker = await browser.newContext();
      const victim = await attacker.newPage();
      const answer = await attacker.request.get(callback, { maxRedirects: 0 });
      expect(answer.headers().location).toBe('/admin?signin=refused');
      await victim.goto(callback);
      expect(await sessionCookie(attacker)).toBeUndefined();
      await attacker.close();

      const tampered = new URL(callback);
      tampered.searchParams.set('state', `${tampered.searchParams.get('state')}x`);
      expect((await context.request.get(tampered.href, { maxRedirects: 0 })).headers().location).toBe('/admin?signin=refused');
      expect(await sessionCookie(context)).toBeUndefined();
      expect((await auditEntries('admin.sign_in_refused')).length).toBeGreaterThanOrEqual(2);
    } finally {
      await context.close();
    }
  });

  it('signs out: the session ends on the server, the cookie is cleared, and the sign-out is audited', async () => {
    const max = await newAdmin(`max.${Date.now()}@example.com`, 'operator');
    const { context, page } = await signIn(max.email);
    try {
      const stolen = (await sessionCookie(context))!.value;
      const status = await page.evaluate(async () => {
        const me = await (await fetch('/admin/me')).json();
        return (await fetch('/admin/auth/logout', { method: 'POST', headers: { 'x-csrf-token': me.csrfToken } })).status;
      });
      expect(status).toBe(204);
      expect(await sessionCookie(context)).toBeUndefined();
      // A copy of the cookie taken before is worth nothing now.
      expect((await fetch(`${baseUrl}/admin/me`, { headers: { cookie: `tdg_admin_session=${stolen}` } })).status).toBe(401);
      expect((await auditEntries('admin.signed_out')).find((e) => (e.actor as { adminId: string }).adminId === max.id)).toBeDefined();
    } finally {
      await context.close();
    }
  });

  it('with PUBLIC_URL, names it as the redirect_uri and checks a write\u2019s origin against it, whatever the Host header says', async () => {
    const publicUrl = 'https://gateway.example.com';
    const port = await freePort();
    const behindProxy = startGateway({
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      BANK_WEBHOOK_SECRET,
      OIDC_ISSUER_URL: issuer,
      OIDC_CLIENT_ID: CLIENT_ID,
      OIDC_CLIENT_SECRET: CLIENT_SECRET,
      PUBLIC_URL: publicUrl,
    });
    /** A request whose Host header is an attacker's name (fetch would not let a test set it). */
    const send = (method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
      new Promise<{ status: number; headers: IncomingHttpHeaders }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, method, path, headers: { host: 'attacker.example', ...headers } }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
        });
        req.on('error', reject);
        req.end(body);
      });
    try {
      await waitFor(
        async () =>
          (await fetch(`http://127.0.0.1:${port}/health/ready`)).ok || (behindProxy.child.exitCode !== null && Promise.reject(new Error(behindProxy.output()))),
        'the second gateway',
      );
      const login = await send('GET', '/admin/auth/login');
      expect(login.status).toBe(302);
      expect(new URL(String(login.headers.location)).searchParams.get('redirect_uri')).toBe(`${publicUrl}/admin/auth/callback`);
      expect(String(login.headers['set-cookie'])).toMatch(/; Secure/);

      const lin = await newAdmin(`lin.${Date.now()}@example.com`, 'admin');
      const cookie = 'public-url-session-cookie-0123456789abcdef';
      await db.query(
        `INSERT INTO admin_sessions (admin_id, token_hash, csrf_token, expires_at) VALUES ($1, encode(sha256($2::bytea), 'hex'), 'csrf', now() + interval '1 hour')`,
        [lin.id, cookie],
      );
      const post = (origin: string) =>
        send(
          'POST',
          '/admin/api-keys',
          { origin, cookie: `tdg_admin_session=${cookie}`, 'content-type': 'application/json' },
          JSON.stringify({ source: 'public-url-test' }),
        );
      // The origin the Host header would make is not the console's; the configured one is.
      expect((await post('http://attacker.example')).status).toBe(403);
      expect((await post(publicUrl)).status).toBe(201);
    } finally {
      behindProxy.child.kill('SIGTERM');
      await behindProxy.exited;
    }
  });

  // Late in the file: it leaves this address without sign-ins for ten minutes.
  it('lets one address have only 20 sign-ins under way: unauthenticated starts cannot fill the database', async () => {
    const live = async () => (await db.query(`SELECT count(*)::int AS n FROM admin_oidc_logins WHERE expires_at > now()`)).rows[0].n as number;
    const before = await live();
    const starts = await Promise.all(Array.from({ length: 30 }, () => fetch(`${baseUrl}/admin/auth/login`, { redirect: 'manual' })));
    const statuses = starts.map((res) => res.status);
    expect(statuses.filter((status) => status === 302)).toHaveLength(20 - before);
    expect(statuses.filter((status) => status === 429)).toHaveLength(10 + before);
    const refused = starts.find((res) => res.status === 429)!;
    // When the oldest of the 20 expires: within the ten minutes a sign-in lives.
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(600);
    expect(await refused.json()).toMatchObject({ code: 'RATE_LIMITED' });
    expect(await live()).toBe(20);
  });

  it('never writes a session token, code or client secret to its log', () => {
    const log = gateway.output();
    expect(log).not.toContain(CLIENT_SECRET);
    expect(log).not.toMatch(/tdgs_[0-9A-Za-z]{20}/);
    expect(log).not.toMatch(/[?&]code=/);
  });
});

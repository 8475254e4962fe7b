/// <reference lib="dom" />
// The page.evaluate callbacks below run in the browser, so this file is typed with the DOM too.
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrowserContext, chromium, Locator, Page } from 'playwright-core';
import { CONSOLE_SCRIPTS } from '../../src/admin/console-assets.js';
import { BROWSER_TIMEOUT_MS, describeWithBrowser, requireChromium, screenshotPath } from '../support/browser.js';
import { adminHeaders, documentBody, IssuedKey, newIdempotencyKey, newSourceWithKey, postDocument, sendWebhook, signedWebhook } from '../support/factories.js';
import { waitFor } from '../support/processes.js';
import { startTestApp, TEST_ADMIN_TOKEN, TEST_WEBHOOK_SECRET, TestApp } from '../support/test-app.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const TOKEN_STORAGE_KEY = 'tdg.adminToken';
const KEY_FORMAT = /^sk_tax_[0-9A-Za-z]{43}$/;
const ADMIN_TOKEN_FORMAT = /^adm_tax_[0-9A-Za-z]{32,}$/;
/** What Chromium logs for a fetch answered 4xx; expected whenever a step provokes a refusal on purpose. */
const REFUSED_FETCH = /^error: Failed to load resource: the server responded with a status of (401|422|429)\b/;
/** The page asks, on load, whether the browser has a console session; signed out, that is a 401. */
const SESSION_PROBE = /status of 401 .*\/admin\/me\)$/;
/** A gateway without single sign-on answers its config with 404, which the page reads as `sso: false`. */
const NO_SSO_ROUTES = /status of 404 .*\/admin\/auth\/config\)$/;
const PAGE_SIZE = 50;

type Role = 'viewer' | 'operator' | 'admin';
interface Person {
  id: string;
  email: string;
  token: string;
}

/** Everything the page reported that a user would call broken: script errors, CSP violations, console errors. */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    const line = `${message.type()}: ${message.text()} (${message.location().url})`;
    if ((message.type() === 'error' || message.type() === 'warning') && !NO_SSO_ROUTES.test(line)) problems.push(line);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  return problems;
}

/** Problems other than the session probe of a signed-out load, whose console line may arrive late. */
function unexpected(problems: string[]): string[] {
  return problems.filter((s) => !SESSION_PROBE.test(s));
}

function cspDirectives(header: string | null): Map<string, string> {
  return new Map(
    (header ?? '')
      .split(';')
      .map((d) => d.trim())
      .filter(Boolean)
      .map((d) => [d.split(/\s+/)[0], d.split(/\s+/).slice(1).join(' ')] as [string, string]),
  );
}

describeWithBrowser('admin console')('admin console (GET /admin) in a real browser', () => {
  let t: TestApp;
  let baseUrl: string;
  let userDataDir: string;
  let context: BrowserContext;
  let page: Page;
  let problems: string[];
  /** Answers 500 until a test says otherwise: a delivery to it is failing right now. */
  let receiver: WebhookReceiver;
  let push: IssuedKey;
  let pushEndpointId: string;
  let pushDocumentId: string;
  let failingId: string;
  let viewer: Person;
  let operator: Person;

  const me = async (key: string) => (await fetch(`${baseUrl}/api/v1/me`, { headers: { 'x-api-key': key } })).status;
  const adminApi = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) => t.app.inject({ method, url, headers: adminHeaders, payload });
  const person = async (role: Role): Promise<Person> => {
    const email = `${role}-${randomBytes(3).toString('hex')}@example.com`;
    const created = await adminApi('POST', '/admin/admins', { email, role, name: `A ${role}` });
    expect(created.statusCode).toBe(201);
    const issued = await adminApi('POST', `/admin/admins/${created.json().id}/tokens`, { name: 'browser' });
    expect(issued.statusCode).toBe(201);
    return { id: created.json().id, email, token: issued.json().token };
  };
  /** GET /admin/me with `token`, from an address of its own: a refusal here must not count towards the browser's lockout. */
  const whoIs = (token: string) =>
    t.app.inject({ method: 'GET', url: '/admin/me', headers: { authorization: `Bearer ${token}` }, remoteAddress: '198.51.100.70' });
  const failures = async () => Number((await t.db.query('SELECT coalesce(sum(failures), 0) AS n FROM admin_auth_failures')).rows[0].n);

  /**
   * A new tab on the console. What loading it signed out logs (the session probe's 401) is checked in its
   * own test, so it is left out here.
   */
  const open = async (path = '/admin') => {
    const p = await context.newPage();
    const seen = watch(p);
    await p.goto(`${baseUrl}${path}`);
    await p.locator('[data-testid="sign-in-view"]:visible, [data-testid="console-view"]:visible').waitFor();
    seen.length = 0;
    return { p, seen };
  };
  const signIn = async (p: Page, token: string) => {
    await p.getByLabel('Admin token').fill(token);
    await p.getByRole('button', { name: 'Sign in' }).click();
  };
  const openAs = async (token: string) => {
    const opened = await open();
    await signIn(opened.p, token);
    await opened.p.getByTestId('console-view').waitFor();
    return opened;
  };
  const go = async (p: Page, view: string) => {
    await p.getByTestId(`nav-${view}`).click();
    await p.locator(`#view-${view}`).waitFor();
  };
  const issue = async (source: string, name?: string, expires?: string): Promise<{ key: string; id: string }> => {
    await page.getByTestId('issue-source').fill(source);
    if (name) await page.getByTestId('issue-name').fill(name);
    if (expires) await page.getByTestId('issue-expires').fill(expires);
    await page.getByRole('button', { name: 'Issue key' }).click();
    await page.getByTestId('secret-panel').waitFor();
    return { key: (await page.getByTestId('secret-key').textContent()) ?? '', id: (await page.getByTestId('secret-id').textContent()) ?? '' };
  };
  const row = (id: string): Locator => page.locator(`[data-testid="key-row"][data-key-id="${id}"]`);
  const status = (id: string, value: string) => row(id).getByTestId('key-status').filter({ hasText: value }).waitFor();
  /** The outcome shown in the row right under `row`. */
  const noteUnder = (p: Page, id: string): Locator => p.locator(`tr.note-row[data-note-for="${id}"] [data-testid="row-note"]`);
  const deliveryRow = (p: Page, id: string) => p.locator(`[data-testid="push-deliveries-table"] [data-testid="push-delivery-row"][data-delivery-id="${id}"]`);
  const endpointRow = (p: Page, id: string) => p.locator(`[data-testid="push-endpoint-row"][data-endpoint-id="${id}"]`);
  const registerEndpoint = async (key: string, url: string) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhook-endpoints',
      headers: { 'x-api-key': key, 'x-idempotency-key': newIdempotencyKey() },
      payload: { url, eventTypes: ['document.created'] },
    });
    expect(res.statusCode).toBe(201);
    return res.json().id as string;
  };

  beforeAll(async () => {
    const executablePath = requireChromium('admin console');
    // Push notifications to a receiver on loopback; a failed attempt is retried only an hour later, so a
    // delivery whose first attempt failed stays pending (failing right now) for the whole test.
    t = await startTestApp({ env: { OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true', OUTBOUND_WEBHOOKS_RETRY_SCHEDULE: '1h' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    userDataDir = await mkdtemp(join(tmpdir(), 'admin-console-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
      timezoneId: 'UTC',
      timeout: BROWSER_TIMEOUT_MS,
    });
    context.setDefaultTimeout(BROWSER_TIMEOUT_MS);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
    // Reported to the console, so `watch` sees any violation even if Chromium stopped logging its own line.
    await context.addInitScript(() =>
      document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`)),
    );

    receiver = await new WebhookReceiver(() => ({ status: 500 })).start();
    push = await newSourceWithKey(t.app, 'browser-push');
    pushEndpointId = await registerEndpoint(push.key, receiver.url);
    const created = await postDocument(t.app, push.key, documentBody(push.source, { providerReference: 'PAY-BROWSER-DOC' }));
    expect(created.statusCode).toBe(201);
    pushDocumentId = created.json().id;
    failingId = await waitFor(async () => {
      const { rows } = await t.db.query(`SELECT id FROM outbound_deliveries WHERE source = $1 AND status = 'pending' AND attempts > 0`, [push.source]);
      return rows[0]?.id as string | undefined;
    }, 'the first attempt to fail');
    viewer = await person('viewer');
    operator = await person('operator');
  });

  afterAll(async () => {
    await context?.close();
    await receiver?.stop();
    await t?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
  });

  it('serves a public page with a CSP that forbids inline script, and no inline code in it', async () => {
    const res = await fetch(`${baseUrl}/admin`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = cspDirectives(res.headers.get('content-security-policy'));
    expect(csp.get('default-src')).toBe("'self'");
    expect(csp.get('script-src')).toBe("'self'");
    expect(csp.get('style-src')).toBe("'self'");
    expect(csp.get('connect-src')).toBe("'self'");
    expect(csp.get('frame-ancestors')).toBe("'none'");
    expect(csp.get('require-trusted-types-for')).toBe("'script'");
    expect(res.headers.get('content-security-policy')).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-store');

    const html = await res.text();
    expect(html.match(/<script\b[^>]*>/g)).toEqual(['<script type="module" src="/admin/console.js">']);
    expect(html).not.toMatch(/\son[a-z]+\s*=/i);
    expect(html).not.toMatch(/\sstyle\s*=|<style/i);

    for (const [path, type] of [
      ...CONSOLE_SCRIPTS.map((name) => [`/admin/${name}`, /^text\/javascript/] as const),
      ['/admin/console.css', /^text\/css/] as const,
    ]) {
      const asset = await fetch(`${baseUrl}${path}`);
      expect([path, asset.status]).toEqual([path, 200]);
      expect(asset.headers.get('content-type')).toMatch(type);
      expect(asset.headers.get('x-content-type-options')).toBe('nosniff');
      expect(asset.headers.get('content-security-policy')).toBe(res.headers.get('content-security-policy'));
      // No module writes markup from a string: Trusted Types would refuse it, and the page builds the DOM instead.
      expect(await asset.text()).not.toMatch(/\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML\(|document\.write\(|\beval\(|new Function\(/);
    }
    expect((await fetch(`${baseUrl}/admin/not-a-module.js`)).status).toBe(404);

    // The browser really enforces it: a script injected into the page does not run.
    const { p, seen } = await open();
    const ran = await p.evaluate(() => {
      try {
        const script = document.createElement('script');
        script.textContent = 'window.inlineRan = true';
        document.body.append(script);
      } catch {
        // Trusted Types refuse even to assign the text.
      }
      return (window as unknown as { inlineRan?: boolean }).inlineRan === true;
    });
    expect(ran).toBe(false);
    expect(seen.join('\n')).toMatch(/CSP violation|Content Security Policy|TrustedScript/);
    await p.close();
  });

  it('asks for an existing session on load without counting it against the lockout, and shows the token form', async () => {
    const before = await failures();
    const p = await context.newPage();
    const seen = watch(p);
    await p.goto(`${baseUrl}/admin`);
    await p.getByTestId('sign-in-view').waitFor();
    expect(await p.getByTestId('sso').isVisible()).toBe(false);
    expect(await p.getByLabel('Admin token').isVisible()).toBe(true);
    // The probe for a session cookie (none here) is refused, and that is all that went wrong.
    await waitFor(async () => seen.some((s) => SESSION_PROBE.test(s)), 'the probe to be logged');
    expect(unexpected(seen)).toEqual([]);
    expect(await failures()).toBe(before);
    await p.close();
  });

  it('offers single sign-on when the gateway has it, and says so when a sign-in was refused', async () => {
    const p = await context.newPage();
    await p.route('**/admin/auth/config', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: '{"sso":true}' }));
    await p.goto(`${baseUrl}/admin?signin=refused`);
    const link = p.getByRole('link', { name: 'Sign in with single sign-on' });
    await link.waitFor();
    expect(await link.getAttribute('href')).toBe('/admin/auth/login');
    expect(await p.getByTestId('sign-in-message').textContent()).toContain('Single sign-on did not sign you in');
    // The message belongs to that one visit: the address no longer carries it.
    expect(p.url()).toBe(`${baseUrl}/admin`);
    expect(await p.getByLabel('Admin token').isVisible()).toBe(true);
    await p.screenshot({ path: screenshotPath('admin-console-sign-in-sso.png') });
    await p.close();
  });

  it('refuses a wrong token with a message and stays on the prompt', async () => {
    const { p, seen } = await open();
    await signIn(p, 'not-the-admin-token-at-all');
    await p.getByTestId('sign-in-message').filter({ hasText: 'This admin token was not accepted' }).waitFor();
    await p.screenshot({ path: screenshotPath('admin-console-sign-in.png') });
    expect(await p.getByTestId('sign-in-view').isVisible()).toBe(true);
    expect(await p.getByTestId('console-view').isVisible()).toBe(false);
    expect(await p.evaluate((k) => sessionStorage.getItem(k), TOKEN_STORAGE_KEY)).toBeNull();
    expect(seen.filter((s) => !REFUSED_FETCH.test(s))).toEqual([]);
    await p.close();
  });

  it('signs in with ADMIN_TOKEN, keeping it in sessionStorage only, and shows who is signed in', async () => {
    ({ p: page, seen: problems } = await open());
    await signIn(page, TEST_ADMIN_TOKEN);
    await page.getByTestId('console-view').waitFor();
    expect(await page.getByTestId('sign-in-view').isVisible()).toBe(false);
    expect(await page.getByTestId('who').textContent()).toBe('ADMIN_TOKEN (break-glass)');
    expect(await page.getByTestId('role').textContent()).toBe('admin');
    expect(await page.getByTestId('nav-admins').isVisible()).toBe(true);
    // The break-glass token belongs to no account, so it has no personal tokens.
    expect(await page.getByTestId('nav-my-tokens').isVisible()).toBe(false);
    expect(await page.locator('#view-overview').isVisible()).toBe(true);

    expect(await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_STORAGE_KEY)).toBe(TEST_ADMIN_TOKEN);
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }))).not.toContain(TEST_ADMIN_TOKEN);
    expect(await page.content()).not.toContain(TEST_ADMIN_TOKEN);
    expect(page.url()).toBe(`${baseUrl}/admin`);
    expect(await page.evaluate(() => document.cookie)).toBe('');
    expect(JSON.stringify(await context.cookies())).not.toContain(TEST_ADMIN_TOKEN);
    expect(unexpected(problems)).toEqual([]);
  });

  it('issues a key, shows it once, lists it, and revokes it through the confirmation dialog, the outcome beside it', async () => {
    await go(page, 'keys');
    const { key, id } = await issue('browser-e2e', 'Browser test');
    expect(key).toMatch(KEY_FORMAT);
    const panel = page.getByTestId('secret-panel');
    expect(await panel.textContent()).toContain('This key will not be shown again');
    expect(await page.getByTestId('secret-source').textContent()).toBe('browser-e2e');
    await page.screenshot({ path: screenshotPath('admin-console-secret.png'), fullPage: true });

    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.getByTestId('copy-status').filter({ hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);

    expect(await me(key)).toBe(200);

    await page.getByRole('button', { name: 'I have stored it' }).click();
    await panel.waitFor({ state: 'hidden' });
    expect(await page.content()).not.toContain(key);
    expect(await page.evaluate(() => JSON.stringify({ ...sessionStorage, ...localStorage }))).not.toContain(key);

    await status(id, 'ACTIVE');
    expect(await row(id).getByTestId('key-label').textContent()).toBe(`${key.slice(0, 12)}…${key.slice(-4)}`);
    expect(await row(id).textContent()).toContain('Browser test');
    expect(await page.locator('[data-testid="key-group"][data-source="browser-e2e"]').count()).toBe(1);

    // Cancelling changes nothing.
    const dialog = page.getByRole('dialog', { name: 'Revoke this key?' });
    await row(id)
      .getByRole('button', { name: /^Revoke key/ })
      .click();
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(`${key.slice(0, 12)}…${key.slice(-4)}`);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await me(key)).toBe(200);

    await row(id)
      .getByRole('button', { name: /^Revoke key/ })
      .click();
    await dialog.waitFor();
    await page.screenshot({ path: screenshotPath('admin-console-dialog.png') });
    await dialog.getByRole('button', { name: 'Revoke key', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    await status(id, 'REVOKED');
    expect(await noteUnder(page, id).textContent()).toContain('was revoked');
    expect(await row(id).getByRole('button').count()).toBe(0);
    expect(await me(key)).toBe(401);

    await go(page, 'audit');
    const audit = page.locator(`[data-testid="audit-row"][data-key-id="${id}"]`);
    await audit.filter({ hasText: 'api_key.revoked' }).waitFor();
    expect(await audit.filter({ hasText: 'api_key.created' }).count()).toBe(1);
    expect(await audit.first().textContent()).toContain('127.0.0.1');
    expect(await audit.first().getByTestId('audit-actor').textContent()).toBe('ADMIN_TOKEN (break-glass)');
    expect(await audit.first().getByTestId('audit-key-label').textContent()).toBe(`${key.slice(0, 12)}…${key.slice(-4)}`);

    expect(unexpected(problems)).toEqual([]);
  });

  it('rotates a key: the successor is shown once and works, the old key stops after a grace of 0', async () => {
    await go(page, 'keys');
    const markup = '<img src=x onerror="window.pwned=1">';
    const old = await issue('browser-rotate', markup);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    // Data is text: the name shows literally and nothing in it runs.
    await row(old.id).getByText(markup, { exact: true }).waitFor();
    expect(await page.locator('[data-testid="keys-table"] img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();

    await row(old.id)
      .getByRole('button', { name: /^Rotate key/ })
      .click();
    const dialog = page.getByRole('dialog', { name: 'Rotate this key?' });
    await dialog.waitFor();
    await dialog.getByLabel('Grace period (seconds)').fill('0');
    await dialog.getByRole('button', { name: 'Rotate key' }).click();
    await dialog.waitFor({ state: 'hidden' });

    await page.getByTestId('secret-panel').waitFor();
    const successor = (await page.getByTestId('secret-key').textContent()) ?? '';
    expect(successor).toMatch(KEY_FORMAT);
    expect(successor).not.toBe(old.key);
    expect(await me(successor)).toBe(200);
    expect(await me(old.key)).toBe(401);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await status(old.id, 'REVOKED');
    expect(await noteUnder(page, old.id).textContent()).toContain(`its successor is ${successor.slice(0, 12)}…${successor.slice(-4)}`);
    expect(unexpected(problems)).toEqual([]);
  });

  it('shows API validation errors next to the form and a rotate grace period out of range in the dialog', async () => {
    await go(page, 'keys');
    await page.getByTestId('issue-source').fill('Not A Source!');
    await page.getByRole('button', { name: 'Issue key' }).click();
    const error = page.getByTestId('issue-error');
    await error.filter({ hasText: 'Source: must be 2-63 characters' }).waitFor();
    expect(await page.getByTestId('issue-source').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByTestId('secret-panel').isVisible()).toBe(false);
    // Correcting the field takes its error away before anything is sent again.
    await page.getByTestId('issue-source').fill('browser-grace');
    await error.waitFor({ state: 'hidden' });
    expect(await page.getByTestId('issue-source').getAttribute('aria-invalid')).toBeNull();

    // datetime-local is local time (UTC in this browser); the API gets the instant.
    const { id } = await issue('browser-grace', undefined, '2031-05-04T10:30');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await error.isVisible()).toBe(false);
    expect(await row(id).locator('time[datetime="2031-05-04T10:30:00.000Z"]').textContent()).toBe('2031-05-04 10:30 UTC');
    await row(id)
      .getByRole('button', { name: /^Rotate key/ })
      .click();
    const dialog = page.getByRole('dialog', { name: 'Rotate this key?' });
    await dialog.getByLabel('Grace period (seconds)').fill('90000');
    await dialog.getByRole('button', { name: 'Rotate key' }).click();
    const rotateError = dialog.getByTestId('rotate-error');
    await rotateError.filter({ hasText: 'Grace period: must not be greater than 86400' }).waitFor();
    await dialog.getByLabel('Grace period (seconds)').fill('3600');
    await rotateError.waitFor({ state: 'hidden' });

    // A rotated key in its grace period has its successor already: it can be revoked, not rotated again.
    await dialog.getByRole('button', { name: 'Rotate key' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await status(id, 'ACTIVE');
    await row(id).getByText('stops').waitFor();
    expect(
      await row(id)
        .getByRole('button', { name: /^Rotate key/ })
        .count(),
    ).toBe(0);
    expect(
      await row(id)
        .getByRole('button', { name: /^Revoke key/ })
        .count(),
    ).toBe(1);
    await page.screenshot({ path: screenshotPath('admin-console-keys.png'), fullPage: true });
    expect(problems.filter((s) => !REFUSED_FETCH.test(s))).toEqual([]);
    // The two refusals this test asked for are accounted for; the next tests start with none.
    problems.length = 0;
  });

  it('with a viewer token: shows the email and role, and hides every action the role cannot take', async () => {
    const { p, seen } = await openAs(viewer.token);
    expect(await p.getByTestId('who').textContent()).toBe(viewer.email);
    expect(await p.getByTestId('role').textContent()).toBe('viewer');
    expect(await p.getByTestId('nav-admins').isVisible()).toBe(false);
    expect(await p.getByTestId('nav-my-tokens').isVisible()).toBe(true);

    await go(p, 'keys');
    await p.locator('[data-testid="key-row"]').first().waitFor();
    expect(await p.getByTestId('issue-card').isVisible()).toBe(false);
    expect(await p.locator('[data-testid="keys-table"] button').count()).toBe(0);
    await p.screenshot({ path: screenshotPath('admin-console-viewer-keys.png'), fullPage: true });

    await go(p, 'deliveries');
    await deliveryRow(p, failingId).waitFor();
    expect(await p.getByTestId('push-retry').count()).toBe(0);
    await go(p, 'endpoints');
    await endpointRow(p, pushEndpointId).waitFor();
    expect(await p.locator('[data-testid="push-endpoints-table"] button').count()).toBe(0);

    // Typing the address of a section the role does not have leads to the overview.
    await p.evaluate(() => (location.hash = '#admins'));
    await p.locator('#view-overview').waitFor();
    expect(await p.locator('#view-admins').isVisible()).toBe(false);

    // Anyone issues and revokes their own tokens; the new one is shown once.
    await go(p, 'my-tokens');
    const panel = p.getByTestId('token-panel');
    await panel.locator('[data-testid="token-row"]').first().waitFor();
    // Signed in with a token that never expires: the expiry is optional here.
    expect(await panel.getByTestId('token-expires-hint').textContent()).toBe('In your local time; empty: never.');
    await panel.getByTestId('token-name').fill('second laptop');
    await panel.getByRole('button', { name: 'Issue token' }).click();
    await p.getByTestId('secret-panel').waitFor();
    const token = (await p.getByTestId('secret-key').textContent()) ?? '';
    expect(token).toMatch(ADMIN_TOKEN_FORMAT);
    expect(await p.getByTestId('secret-for').textContent()).toBe(viewer.email);
    const tokenId = (await p.getByTestId('secret-id').textContent()) ?? '';
    await p.getByRole('button', { name: 'I have stored it' }).click();
    expect((await whoIs(token)).statusCode).toBe(200);
    const tokenRow = panel.locator(`[data-testid="token-row"][data-id="${tokenId}"]`);
    await tokenRow.getByRole('button', { name: /^Revoke token/ }).click();
    const confirm = p.getByRole('dialog', { name: 'Revoke this token?' });
    await confirm.getByRole('button', { name: 'Revoke token' }).click();
    await confirm.waitFor({ state: 'hidden' });
    await tokenRow.getByTestId('token-state').filter({ hasText: 'revoked' }).waitFor();
    expect(await noteUnder(p, tokenId).textContent()).toContain('Revoked');
    expect((await whoIs(token)).statusCode).toBe(401);
    await p.screenshot({ path: screenshotPath('admin-console-my-tokens.png'), fullPage: true });

    const content = await p.content();
    expect(content).not.toContain(viewer.token);
    expect(content).not.toContain(token);
    expect(unexpected(seen)).toEqual([]);
    await p.close();
  });

  it('with an operator token: disabling an endpoint changes its row and shows the outcome beside it', async () => {
    const switchSource = await newSourceWithKey(t.app, 'browser-switch');
    const switchId = await registerEndpoint(switchSource.key, 'http://127.0.0.1:9/never');
    const { p, seen } = await openAs(operator.token);
    expect(await p.getByTestId('role').textContent()).toBe('operator');
    expect(await p.getByTestId('nav-admins').isVisible()).toBe(false);
    await go(p, 'keys');
    expect(await p.getByTestId('issue-card').isVisible()).toBe(false);

    await go(p, 'endpoints');
    const target = endpointRow(p, switchId);
    await target.waitFor();
    expect(await target.getAttribute('data-enabled')).toBe('true');
    await target.getByRole('button', { name: /^Disable endpoint/ }).click();
    await p.locator(`[data-testid="push-endpoint-row"][data-endpoint-id="${switchId}"][data-enabled="false"]`).waitFor();
    expect(await target.getByTestId('push-endpoint-disabled').textContent()).toBe('by an administrator');
    expect(await noteUnder(p, switchId).textContent()).toMatch(/^Disabled at .* UTC: its pushes wait/);
    // The note is next to the row it concerns, in view, not somewhere else on the page.
    expect(await noteUnder(p, switchId).isVisible()).toBe(true);
    const stored = (await t.db.query('SELECT enabled, disabled_reason FROM webhook_endpoints WHERE id = $1', [switchId])).rows[0];
    expect(stored).toEqual({ enabled: false, disabled_reason: 'admin' });
    await p.getByTestId('push-endpoints-table').screenshot({ path: screenshotPath('admin-console-endpoints.png') });

    await target.getByRole('button', { name: /^Enable endpoint/ }).click();
    await p.locator(`[data-testid="push-endpoint-row"][data-endpoint-id="${switchId}"][data-enabled="true"]`).waitFor();
    expect(await noteUnder(p, switchId).textContent()).toMatch(/^Enabled at/);
    expect(unexpected(seen)).toEqual([]);
    await p.close();
  });

  it('with an operator token: a delivery failing right now is shown by default, with its event type and document, and Retry updates its row in place', async () => {
    const { p, seen } = await openAs(operator.token);
    await go(p, 'deliveries');
    expect(await p.getByTestId('filter-delivery-status').inputValue()).toBe('attention');
    const failing = deliveryRow(p, failingId);
    await failing.waitFor();
    expect(await failing.getAttribute('data-status')).toBe('pending');
    expect(await failing.getAttribute('data-failing')).toBe('true');
    expect(await failing.getByTestId('delivery-status').textContent()).toBe('failing');
    expect(await failing.getByTestId('delivery-event-type').textContent()).toBe('document.created');
    expect(await failing.getByTestId('delivery-document').getAttribute('data-document-id')).toBe(pushDocumentId);
    expect(await failing.getByTestId('delivery-last-result').textContent()).toBe('HTTP 500');
    expect(await failing.textContent()).toContain(receiver.url);
    await p.getByTestId('push-section').screenshot({ path: screenshotPath('admin-console-deliveries-failing.png') });

    receiver.respond = () => ({ status: 200 });
    await failing.getByRole('button', { name: /^Retry delivery/ }).click();
    await noteUnder(p, failingId).filter({ hasText: 'Retry requested' }).waitFor();
    // The attempt follows at once; the same row shows its result without a refresh.
    await p.locator(`[data-testid="push-delivery-row"][data-delivery-id="${failingId}"][data-status="succeeded"]`).waitFor();
    expect(await noteUnder(p, failingId).textContent()).toMatch(/^Retried: delivered \(HTTP 200\)/);
    expect(await failing.getByTestId('push-retry').count()).toBe(0);
    expect(await p.getByTestId('notice').isVisible()).toBe(false);
    expect((await t.db.query('SELECT status FROM outbound_deliveries WHERE id = $1', [failingId])).rows[0].status).toBe('succeeded');
    await p.getByTestId('push-section').screenshot({ path: screenshotPath('admin-console-deliveries-retried.png') });

    // Refreshed, the attention list no longer has it; the succeeded ones do.
    await p.getByTestId('refresh-deliveries').click();
    await failing.waitFor({ state: 'detached' });
    await p.getByTestId('filter-delivery-status').selectOption('succeeded');
    await failing.waitFor();
    expect(unexpected(seen)).toEqual([]);
    await p.close();
  });

  it('pages through a list longer than a page with More, and searches by source across keys, endpoints and deliveries', async () => {
    for (let i = 0; i < PAGE_SIZE + 5; i++)
      expect((await adminApi('POST', '/admin/api-keys', { source: 'browser-paging', name: `paged ${i}` })).statusCode).toBe(201);

    // Not a source at all: said once, at the search field, and nothing is asked.
    await page.getByTestId('search-source').fill('Not A Source');
    await page.getByTestId('search-submit').click();
    await page.getByTestId('notice').filter({ hasText: 'is not a source' }).waitFor();
    expect(await page.getByTestId('search-source').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByTestId('search-summary').isVisible()).toBe(false);

    await page.getByTestId('search-source').fill('browser-paging');
    await page.getByTestId('search-submit').click();
    await page
      .getByTestId('search-summary-keys')
      .filter({ hasText: `${PAGE_SIZE}+ API keys` })
      .waitFor();
    expect(await page.getByTestId('notice').isVisible()).toBe(false);
    await go(page, 'keys');
    const rows = page.locator('[data-testid="key-row"]');
    await page.locator('[data-testid="key-group"][data-source="browser-paging"]').waitFor();
    expect(await rows.count()).toBe(PAGE_SIZE);
    expect(await page.locator('[data-testid="key-group"]').count()).toBe(1);
    await page.getByTestId('keys-more').click();
    await waitFor(async () => (await rows.count()) === PAGE_SIZE + 5, 'the second page');
    expect(await page.getByTestId('keys-more').isVisible()).toBe(false);
    expect(new Set(await rows.evaluateAll((all) => all.map((r) => r.getAttribute('data-key-id')))).size).toBe(PAGE_SIZE + 5);

    // A source without deliveries: the empty list says so plainly, never as an alarm.
    await go(page, 'deliveries');
    const noDeliveries = page.getByTestId('push-deliveries-empty');
    await page.getByTestId('filter-delivery-status').selectOption('attention');
    await noDeliveries.filter({ hasText: /^No deliveries need attention for the source browser-paging\.$/ }).waitFor();
    await page.getByTestId('filter-delivery-status').selectOption('');
    await noDeliveries.filter({ hasText: /^No deliveries yet for the source browser-paging\.$/ }).waitFor();
    expect(await noDeliveries.isVisible()).toBe(true);

    // One source across the three lists: its keys, endpoints and deliveries only.
    await page.getByTestId('search-source').fill(push.source);
    await page.getByTestId('search-submit').click();
    await page.getByTestId('search-summary-source').filter({ hasText: push.source }).waitFor();
    await page.getByTestId('search-summary-keys').filter({ hasText: '1 API key' }).waitFor();
    expect(await page.getByTestId('search-summary-endpoints').textContent()).toBe('1 client endpoint');
    await page.locator('[data-testid="key-group"][data-source="browser-paging"]').waitFor({ state: 'detached' });
    expect(await page.locator('[data-testid="key-group"]').evaluateAll((all) => all.map((g) => g.getAttribute('data-source')))).toEqual([push.source]);
    await page.screenshot({ path: screenshotPath('admin-console-search.png'), fullPage: true });
    await go(page, 'endpoints');
    await endpointRow(page, pushEndpointId).waitFor();
    expect(await page.locator('[data-testid="push-endpoint-row"] .source').allTextContents()).toEqual([push.source]);
    await go(page, 'deliveries');
    await page.getByTestId('filter-delivery-status').selectOption('');
    await deliveryRow(page, failingId).waitFor();
    expect(new Set(await page.locator('[data-testid="push-deliveries-table"] [data-testid="push-delivery-row"] .source').allTextContents())).toEqual(
      new Set([push.source]),
    );

    await page.getByTestId('search-clear').click();
    await page.getByTestId('search-summary').waitFor({ state: 'hidden' });
    await go(page, 'endpoints');
    await page.locator('[data-testid="push-endpoint-row"]').nth(1).waitFor();
    expect(new Set(await page.locator('[data-testid="push-endpoint-row"] .source').allTextContents())).toEqual(new Set([push.source, 'browser-switch']));

    // The audit log pages the same way: it has more than a page of entries by now.
    await go(page, 'audit');
    const entries = page.locator('[data-testid="audit-row"]');
    await entries.nth(PAGE_SIZE - 1).waitFor();
    expect(await entries.count()).toBe(PAGE_SIZE);
    await page.getByTestId('audit-more').click();
    await entries.nth(PAGE_SIZE).waitFor();
    expect(unexpected(problems)).toEqual([]);
  });

  it('finds documents by source and by providerReference, and opens one with its events, deliveries and bank events', async () => {
    const other = await newSourceWithKey(t.app, 'browser-docs-other');
    expect((await postDocument(t.app, other.key, documentBody(other.source, { providerReference: 'PAY-BROWSER-DOC-2' }))).statusCode).toBe(201);
    expect(
      (
        await sendWebhook(
          t.app,
          signedWebhook(TEST_WEBHOOK_SECRET, { eventId: 'evt-browser-doc', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'PAY-BROWSER-DOC' }),
        )
      ).statusCode,
    ).toBe(200);

    await go(page, 'documents');
    // Neither a source nor a reference: said at once, nothing asked.
    await page.getByTestId('doc-search').click();
    await page.getByTestId('documents-alert').filter({ hasText: 'Enter a source or a provider reference' }).waitFor();

    await page.getByTestId('doc-source').fill(push.source);
    await page.getByTestId('doc-search').click();
    const found = page.locator(`[data-testid="document-row"][data-document-id="${pushDocumentId}"]`);
    await found.waitFor();
    expect(await page.locator('[data-testid="document-row"]').count()).toBe(1);
    expect(await found.getByTestId('document-status').textContent()).toBe('PAID');

    await page.getByTestId('doc-source').fill('');
    await page.getByTestId('doc-reference').fill('PAY-BROWSER-DOC-2');
    await page.getByTestId('doc-search').click();
    await found.waitFor({ state: 'detached' });
    await page.locator('[data-testid="document-row"]').filter({ hasText: other.source }).waitFor();

    await page.getByTestId('doc-reference').fill('PAY-BROWSER-DOC');
    await page.getByTestId('doc-search').click();
    await found.getByRole('button', { name: /^Open document/ }).click();
    const detail = page.getByTestId('document-detail');
    await detail.getByTestId('document-id').filter({ hasText: pushDocumentId }).waitFor();
    const events = detail.locator('[data-testid="document-event-row"]');
    expect(await events.allTextContents()).toEqual([
      expect.stringContaining('document.created'),
      expect.stringMatching(/document\.status_changed.*PENDING_PAYMENT → PAID/),
    ]);
    await detail.locator(`[data-testid="push-delivery-row"][data-delivery-id="${failingId}"][data-status="succeeded"]`).waitFor();
    await detail.locator('[data-testid="webhook-row"][data-event-id="evt-browser-doc"][data-outcome="applied"]').waitFor();
    // No other source claims its reference: nothing about claims is shown.
    expect(await detail.getByTestId('document-claims').isHidden()).toBe(true);

    // Another source claims the reference after a bank event was applied to this document: a later claim,
    // which administrators see on both documents, each linking to the other.
    const late = (await postDocument(t.app, other.key, documentBody(other.source, { providerReference: 'PAY-BROWSER-DOC' }))).json();
    await page.getByTestId('refresh-documents').click();
    const claims = detail.getByTestId('document-claims');
    const lateClaim = claims.locator(`[data-testid="document-claim"][data-document-id="${late.id}"]`);
    await lateClaim.waitFor();
    expect(await claims.getByTestId('document-claims-where').textContent()).toContain('go to this document');
    expect(await lateClaim.textContent()).toContain(other.source);
    expect(await lateClaim.getByTestId('claim-role').textContent()).toBe('gets none of them');
    await page.screenshot({ path: screenshotPath('admin-console-document.png'), fullPage: true });
    await lateClaim.getByTestId('claim-document').click();
    await detail.getByTestId('document-id').filter({ hasText: late.id }).waitFor();
    expect(await claims.getByTestId('document-claims-where').textContent()).toContain('this document gets none of them');
    const established = claims.locator(`[data-testid="document-claim"][data-document-id="${pushDocumentId}"]`);
    expect(await established.getByTestId('claim-role').textContent()).toBe('gets its bank events');

    // A delivery's document link leads here too.
    await go(page, 'deliveries');
    await page.getByTestId('filter-delivery-status').selectOption('');
    await deliveryRow(page, failingId).getByTestId('delivery-document').click();
    await page.locator('#view-documents').waitFor();
    await detail.getByTestId('document-id').filter({ hasText: pushDocumentId }).waitFor();
    expect(unexpected(problems)).toEqual([]);
  });

  it('shows the bank webhook events with their outcome, filters them, and applies an ambiguous one', async () => {
    const client = await newSourceWithKey(t.app, 'browser-webhooks');
    await postDocument(t.app, client.key, documentBody(client.source, { providerReference: 'PAY-BROWSER-1' }));
    const rival = await newSourceWithKey(t.app, 'browser-rival');
    const mine = (await postDocument(t.app, client.key, documentBody(client.source, { providerReference: 'PAY-SHARED-1' }))).json();
    await postDocument(t.app, rival.key, documentBody(rival.source, { providerReference: 'PAY-SHARED-1' }));
    const applied = { eventId: 'evt-browser-applied', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'PAY-BROWSER-1' };
    const unmatched = { eventId: 'evt-browser-unmatched', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'PAY-NOBODY' };
    const ambiguous = { eventId: 'evt-browser-ambiguous', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'PAY-SHARED-1' };
    for (const event of [applied, unmatched, ambiguous]) expect((await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event))).statusCode).toBe(200);

    await go(page, 'bank-events');
    await page.getByTestId('refresh-bank-events').click();
    const table = page.getByTestId('webhooks-table');
    const rowOf = (eventId: string) => table.locator(`[data-testid="webhook-row"][data-event-id="${eventId}"]`);
    await rowOf(applied.eventId).waitFor();
    expect(await rowOf(applied.eventId).getAttribute('data-outcome')).toBe('applied');
    expect(await rowOf(unmatched.eventId).getAttribute('data-outcome')).toBe('unmatched');
    expect(await rowOf(unmatched.eventId).textContent()).toContain('PAY-NOBODY');

    await page.getByTestId('filter-outcome').selectOption('unmatched');
    await rowOf(applied.eventId).waitFor({ state: 'detached' });
    const outcomes = await table.locator('[data-testid="webhook-row"]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-outcome')));
    expect(outcomes.length).toBeGreaterThan(0);
    expect(new Set(outcomes)).toEqual(new Set(['unmatched']));

    await page.getByTestId('filter-outcome').selectOption('ambiguous');
    await rowOf(ambiguous.eventId).waitFor();
    expect(await table.locator('[data-testid="webhook-row"]').count()).toBe(1);
    await rowOf(ambiguous.eventId)
      .getByRole('button', { name: /^Apply bank event/ })
      .click();
    const dialog = page.getByRole('dialog', { name: 'Apply this bank event?' });
    await dialog.getByTestId('apply-choice').nth(1).waitFor();
    expect(await dialog.getByTestId('apply-choice').count()).toBe(2);
    await page.screenshot({ path: screenshotPath('admin-console-apply.png') });
    await dialog.locator(`input[value="${mine.id}"]`).check();
    await dialog.getByRole('button', { name: 'Apply to this document' }).click();
    await dialog.waitFor({ state: 'hidden' });
    await table.locator(`[data-testid="webhook-row"][data-event-id="${ambiguous.eventId}"][data-outcome="applied"]`).waitFor();
    expect(await noteUnder(page, ambiguous.eventId).textContent()).toContain(`Applied at`);
    expect(await rowOf(ambiguous.eventId).getByTestId('bank-document').getAttribute('data-document-id')).toBe(mine.id);
    expect((await t.db.query('SELECT status FROM documents WHERE id = $1', [mine.id])).rows[0].status).toBe('PAID');
    await page.getByTestId('webhooks-table').screenshot({ path: screenshotPath('admin-console-webhooks.png') });
    await page.getByTestId('filter-outcome').selectOption('');
    expect(unexpected(problems)).toEqual([]);
  });

  it('draws the charts of push attempts and bank webhook outcomes as SVG from the server figures', async () => {
    await go(page, 'overview');
    const deliveries = page.getByTestId('chart-deliveries');
    const bank = page.getByTestId('chart-bank');
    // The seeded traffic: the first attempt answered 500, the retry 200, and the bank events of the tests above.
    // Waited for, not counted at once: the overview may still show the figures of an earlier visit while
    // it fetches new ones.
    for (const bar of [
      deliveries.locator('rect.bar-retried'),
      deliveries.locator('rect.bar-succeeded'),
      bank.locator('rect.bar-applied'),
      bank.locator('rect.bar-unmatched'),
    ]) {
      await bar.first().waitFor();
    }
    // A delivery that failed once and succeeded on its retry counts its failed attempt as retried, not
    // failed: "Failed" counts only the last attempt of each delivery that gave up.
    expect((await t.db.query('SELECT status FROM outbound_deliveries WHERE id = $1', [failingId])).rows[0].status).toBe('succeeded');
    const attempts = (
      await t.db.query(
        `SELECT count(*) FILTER (WHERE a.error IS NULL AND a.response_status BETWEEN 200 AND 299)::int AS succeeded,
                count(*) FILTER (WHERE NOT (a.error IS NULL AND a.response_status BETWEEN 200 AND 299))::int AS unsuccessful,
                count(DISTINCT a.delivery_id) FILTER (WHERE d.status = 'failed')::int AS "gaveUp",
                count(*) FILTER (WHERE a.delivery_id = $1 AND a.response_status = 500)::int AS "failingFirst"
           FROM outbound_delivery_attempts a JOIN outbound_deliveries d ON d.id = a.delivery_id`,
        [failingId],
      )
    ).rows[0];
    expect(attempts.failingFirst).toBe(1);
    const stats = (await adminApi('GET', '/admin/stats/outbound-deliveries?hours=3')).json();
    const total = (series: 'succeeded' | 'retried' | 'failed') => stats.data.reduce((sum: number, b: Record<string, number>) => sum + b[series], 0);
    expect({ succeeded: total('succeeded'), retried: total('retried'), failed: total('failed') }).toEqual({
      succeeded: attempts.succeeded,
      retried: attempts.unsuccessful - attempts.gaveUp,
      failed: attempts.gaveUp,
    });
    for (const series of ['succeeded', 'retried', 'failed'] as const) {
      const drawn = await deliveries
        .locator(`rect.bar-${series}`)
        .evaluateAll((rects) => rects.reduce((sum, r) => sum + Number(r.getAttribute('data-value')), 0));
      expect([series, drawn]).toEqual([series, total(series)]);
      expect(await deliveries.locator(`.legend [data-series="${series}"] strong`).textContent()).toBe(String(total(series)));
    }
    expect(await deliveries.locator('.legend li').allTextContents()).toEqual([
      `Succeeded ${total('succeeded')}`,
      `Retried ${total('retried')}`,
      `Failed ${total('failed')}`,
    ]);
    expect(await deliveries.locator('svg').getAttribute('aria-label')).toMatch(
      /^Push attempts in the last 3 hours, per minute: \d+ succeeded, \d+ retried(, \d+ failed)?\.$/,
    );
    // Bars have height: a chart of zero-height rectangles would pass the counts above.
    const heights = await bank.locator('rect.bar').evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('height'))));
    expect(Math.min(...heights)).toBeGreaterThan(0);
    expect(await page.locator('#tile-ambiguous-value').textContent()).toBe('0');

    await page.getByTestId('chart-hours').selectOption('24');
    await deliveries.locator('svg[aria-label*="last 24 hours"]').waitFor();
    await page.getByTestId('chart-hours').selectOption('3');
    await deliveries.locator('svg[aria-label*="last 3 hours"]').waitFor();
    await page.screenshot({ path: screenshotPath('admin-console-overview.png'), fullPage: true });
    expect(unexpected(problems)).toEqual([]);
  });

  it("shows in the audit log who did what: the operator's email, filtered by administrator and action", async () => {
    await go(page, 'audit');
    await page.getByTestId('filter-admin').locator(`option[value="${operator.id}"]`).waitFor({ state: 'attached' });
    await page.getByTestId('filter-admin').selectOption(operator.id);
    const entries = page.locator('[data-testid="audit-row"]');
    await entries.filter({ hasText: 'outbound_delivery.retried' }).waitFor();
    expect(new Set(await entries.getByTestId('audit-actor').allTextContents())).toEqual(new Set([operator.email]));
    expect(new Set(await entries.evaluateAll((all) => all.map((r) => r.getAttribute('data-action'))))).toEqual(
      new Set(['webhook_endpoint.disabled', 'webhook_endpoint.enabled', 'outbound_delivery.retried']),
    );
    await page.getByTestId('filter-action').selectOption('webhook_endpoint.disabled');
    await entries.filter({ hasText: 'outbound_delivery.retried' }).waitFor({ state: 'detached' });
    expect(await entries.count()).toBe(1);
    await page.getByTestId('audit-table').screenshot({ path: screenshotPath('admin-console-audit.png') });
    await page.getByTestId('filter-action').selectOption('');
    await page.getByTestId('filter-admin').selectOption('');
    expect(unexpected(problems)).toEqual([]);
  });

  it('manages administrators: adds one, changes the role, issues a token shown once, disables and enables the account', async () => {
    await go(page, 'admins');
    const email = `ada-${randomBytes(3).toString('hex')}@example.com`;
    await page.getByTestId('admin-email').fill(email);
    await page.getByTestId('admin-role').selectOption('viewer');
    await page.getByTestId('admin-name').fill('Ada');
    await page.getByTestId('admin-submit').click();
    const ada = page.locator(`[data-testid="admin-row"][data-email="${email}"]`);
    await ada.waitFor();
    const adaId = (await ada.getAttribute('data-id')) ?? '';
    expect(await noteUnder(page, adaId).textContent()).toContain('Added');

    await ada.getByTestId('admin-role-select').selectOption('operator');
    await ada.getByRole('button', { name: 'Change role' }).click();
    await page.locator(`[data-testid="admin-row"][data-id="${adaId}"][data-role="operator"]`).waitFor();
    expect(await noteUnder(page, adaId).textContent()).toContain('Role changed to operator');

    await ada.getByRole('button', { name: `Tokens of ${email}` }).click();
    const panel = page.locator(`[data-testid="token-panel"][data-admin-id="${adaId}"]`);
    await panel.getByRole('button', { name: 'Issue token' }).click();
    await page.getByTestId('secret-panel').waitFor();
    const token = (await page.getByTestId('secret-key').textContent()) ?? '';
    expect(token).toMatch(ADMIN_TOKEN_FORMAT);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await page.content()).not.toContain(token);
    expect((await whoIs(token)).json()).toMatchObject({ actor: { email }, role: 'operator' });
    await panel.locator('[data-testid="token-row"]').waitFor();

    await ada.getByRole('button', { name: `Disable ${email}` }).click();
    const confirm = page.getByRole('dialog', { name: `Disable ${email}?` });
    await confirm.getByRole('button', { name: 'Disable account' }).click();
    await page.locator(`[data-testid="admin-row"][data-id="${adaId}"][data-disabled="true"]`).waitFor();
    expect((await whoIs(token)).statusCode).toBe(401);
    await page.screenshot({ path: screenshotPath('admin-console-admins.png'), fullPage: true });
    await ada.getByRole('button', { name: `Enable ${email}` }).click();
    await page.locator(`[data-testid="admin-row"][data-id="${adaId}"][data-disabled="false"]`).waitFor();
    expect((await whoIs(token)).statusCode).toBe(200);

    // The audit log says what each change changed.
    await go(page, 'audit');
    await page.getByTestId('filter-action').selectOption('admin.updated');
    const changes = page.locator('[data-testid="audit-row"]').getByTestId('audit-changes');
    for (const change of ['role: viewer → operator', 'disabled: false → true', 'disabled: true → false'])
      await changes.filter({ hasText: change }).first().waitFor();
    await page.getByTestId('filter-action').selectOption('');
    expect(unexpected(problems)).toEqual([]);
  });

  it('uses a console session (the cookie single sign-on sets): writes carry the CSRF token, sign-out ends it', async () => {
    const admin = await person('operator');
    const cookie = randomBytes(32).toString('base64url');
    const csrf = randomBytes(24).toString('base64url');
    await t.db.query(`INSERT INTO admin_sessions (admin_id, token_hash, csrf_token, expires_at) VALUES ($1, $2, $3, now() + interval '1 hour')`, [
      admin.id,
      createHash('sha256').update(cookie).digest('hex'),
      csrf,
    ]);
    await context.addCookies([{ name: 'tdg_admin_session', value: cookie, url: `${baseUrl}/admin`, httpOnly: true, sameSite: 'Strict' }]);
    try {
      const { p, seen } = await open('/admin#endpoints');
      await p.getByTestId('console-view').waitFor();
      expect(await p.getByTestId('who').textContent()).toBe(admin.email);
      expect(await p.getByTestId('role').textContent()).toBe('operator');
      expect(await p.evaluate(() => document.cookie)).toBe('');
      expect(await p.evaluate(() => JSON.stringify({ ...sessionStorage, ...localStorage }))).not.toContain(csrf);

      const target = endpointRow(p, pushEndpointId);
      await target.getByRole('button', { name: /^Disable endpoint/ }).click();
      await p.locator(`[data-testid="push-endpoint-row"][data-endpoint-id="${pushEndpointId}"][data-enabled="false"]`).waitFor();
      await target.getByRole('button', { name: /^Enable endpoint/ }).click();
      await p.locator(`[data-testid="push-endpoint-row"][data-endpoint-id="${pushEndpointId}"][data-enabled="true"]`).waitFor();
      const audit = (await adminApi('GET', `/admin/audit-log?adminId=${admin.id}`)).json().data;
      expect(audit.map((e: { action: string; actor: { type: string } }) => [e.action, e.actor.type])).toEqual([
        ['webhook_endpoint.enabled', 'session'],
        ['webhook_endpoint.disabled', 'session'],
      ]);

      // The sign-out route comes with single sign-on; here the test answers for it and checks what the page sends.
      // A sign-out the gateway could not do leaves the page signed in, saying so.
      await p.route('**/admin/auth/logout', (route) =>
        route.fulfill({ status: 503, contentType: 'application/problem+json', body: JSON.stringify({ status: 503, detail: 'The database is not available' }) }),
      );
      await p.getByRole('button', { name: 'Sign out' }).click();
      await p.getByTestId('notice').filter({ hasText: 'Signing out failed: The database is not available. The session is still open' }).waitFor();
      expect(await p.getByTestId('console-view').isVisible()).toBe(true);
      await p.unroute('**/admin/auth/logout');
      let logout: Record<string, string> | undefined;
      await p.route('**/admin/auth/logout', (route) => {
        logout = route.request().headers();
        return route.fulfill({ status: 204 });
      });
      await p.getByRole('button', { name: 'Sign out' }).click();
      await p.getByTestId('sign-in-view').waitFor();
      expect(logout?.['x-csrf-token']).toBe(csrf);
      expect(logout?.authorization).toBeUndefined();
      expect(await p.locator('[data-testid="push-endpoint-row"]').count()).toBe(0);
      expect(unexpected(seen).filter((line) => !/status of 503 .*\/admin\/auth\/logout\)$/.test(line))).toEqual([]);
      await p.close();
    } finally {
      await context.clearCookies();
    }
  });

  it('returns to the prompt with a message when the API answers 401 mid-session, and signs out on request', async () => {
    await page.evaluate((k) => sessionStorage.setItem(k, 'a-token-that-stopped-working'), TOKEN_STORAGE_KEY);
    await page.reload();
    await page.getByTestId('sign-in-message').filter({ hasText: 'signed out' }).waitFor();
    expect(await page.getByTestId('console-view').isVisible()).toBe(false);
    expect(await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_STORAGE_KEY)).toBeNull();

    await signIn(page, TEST_ADMIN_TOKEN);
    await page.getByTestId('console-view').waitFor();
    await go(page, 'keys');
    await page.locator('[data-testid="key-row"]').first().waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByTestId('sign-in-view').waitFor();
    expect(await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_STORAGE_KEY)).toBeNull();
    expect(await page.locator('[data-testid="key-row"]').count()).toBe(0);
    expect(await page.getByTestId('whoami').isVisible()).toBe(false);

    // A token revoked while its tab is open: the next call is refused and the tab signs out.
    const short = await person('viewer');
    await signIn(page, short.token);
    await page.getByTestId('console-view').waitFor();
    const tokenId = (await adminApi('GET', `/admin/admins/${short.id}/tokens`)).json().data[0].id;
    expect((await adminApi('POST', `/admin/admin-tokens/${tokenId}/revoke`)).statusCode).toBe(200);
    await page.getByTestId('nav-endpoints').click();
    await page.getByTestId('sign-in-message').filter({ hasText: 'signed out' }).waitFor();
    expect(await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_STORAGE_KEY)).toBeNull();
    expect(problems.filter((s) => !REFUSED_FETCH.test(s))).toEqual([]);
  });

  it("shows a viewer the archive: entries sealed, the seal lag, the latest checkpoint and the last verification's findings", async () => {
    await waitFor(async () => (await t.db.query('SELECT 1 FROM archive_checkpoints LIMIT 1')).rowCount === 1, 'a first checkpoint');
    const { p, seen } = await openAs(viewer.token);
    await go(p, 'archive');
    await p.getByTestId('archive-checkpoint-note').waitFor();
    expect(Number(await p.locator('#tile-archive-size-value').textContent())).toBeGreaterThan(0);
    expect(await p.locator('#tile-archive-lag-value').textContent()).toMatch(/^\d+\.\d s$/);
    expect(await p.getByTestId('archive-checkpoint-note').textContent()).toMatch(/^\S+\n\d+\n[A-Za-z0-9+/]+=*\n\n— /);
    expect(await p.getByTestId('archive-verification').textContent()).toContain('tdg archive verify has not been run');
    // A run that found something, as `tdg archive verify` records it: its findings are listed.
    await t.db.query(`INSERT INTO archive_verifications (started_at, finished_at, tree_size, finding_count, findings) VALUES (now(), now(), 3, 1, $1)`, [
      JSON.stringify([{ kind: 'document_changed', documentId: pushDocumentId, index: 0, detail: 'the document differs from its latest entry: totalAmount' }]),
    ]);
    await p.getByTestId('refresh-archive').click();
    await p.getByTestId('archive-finding').waitFor();
    expect(await p.getByTestId('archive-finding').textContent()).toContain(pushDocumentId);
    expect(await p.locator('#tile-archive-findings').getAttribute('class')).toContain('tile-alert');
    expect(seen).toEqual([]);
    await p.close();
  });

  it('counts one wrong sign-in once against the lockout, and one stale stored token once', async () => {
    const { p, seen } = await open();
    const before = await failures();
    await signIn(p, 'one-wrong-token-typed-once');
    await p.getByTestId('sign-in-message').filter({ hasText: 'This admin token was not accepted' }).waitFor();
    expect(await failures()).toBe(before + 1);

    await p.evaluate((k) => sessionStorage.setItem(k, 'a-stored-token-gone-stale'), TOKEN_STORAGE_KEY);
    await p.reload();
    await p.getByTestId('sign-in-message').filter({ hasText: 'signed out' }).waitFor();
    expect(await failures()).toBe(before + 2);
    expect(seen.filter((s) => !REFUSED_FETCH.test(s))).toEqual([]);
    await p.close();
  });

  // Last: the lockout answers this address's further wrong tokens with 429 for the rest of the minute.
  it('shows Retry-After when too many wrong tokens lock the address out (429)', async () => {
    const message = page.getByTestId('sign-in-message');
    // Up to 25 tries: the lockout counts per calendar minute, and a minute may end during the loop.
    for (let attempt = 0; attempt < 25; attempt++) {
      await signIn(page, `wrong-token-${attempt}`);
      await page.getByRole('button', { name: 'Sign in' }).and(page.locator(':not([disabled])')).waitFor();
      if ((await message.textContent())?.includes('Too many failed')) break;
    }
    expect(await message.textContent()).toMatch(/Too many failed admin sign-ins .* Try again in \d+ seconds\./);
    expect(await page.getByTestId('console-view').isVisible()).toBe(false);
    expect(problems.filter((s) => !REFUSED_FETCH.test(s))).toEqual([]);
  });
});

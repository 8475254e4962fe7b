/// <reference lib="dom" />
// The page.evaluate callbacks below run in the browser, so this file is typed with the DOM too.
import { mkdtemp, rm } from 'node:fs/promises';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrowserContext, chromium, Locator, Page } from 'playwright-core';
import { describeWithBrowser, requireChromium, screenshotPath } from '../support/browser';
import { documentBody, newIdempotencyKey, newSourceWithKey, postDocument, sendWebhook, signedWebhook } from '../support/factories';
import { waitFor } from '../support/processes';
import { startTestApp, TEST_ADMIN_TOKEN, TEST_WEBHOOK_SECRET, TestApp } from '../support/test-app';
import { WebhookReceiver } from '../support/webhook-receiver';

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const TOKEN_STORAGE_KEY = 'tdg.adminToken';
const KEY_FORMAT = /^sk_tax_[0-9A-Za-z]{43}$/;
/** What Chromium logs for a fetch answered 4xx; expected whenever a step provokes a refusal on purpose. */
const REFUSED_FETCH = /^error: Failed to load resource: the server responded with a status of (401|422|429)\b/;

/** Everything the page reported that a user would call broken: script errors, CSP violations, console errors. */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') problems.push(`${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  return problems;
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

  const me = async (key: string) => (await fetch(`${baseUrl}/api/v1/me`, { headers: { 'x-api-key': key } })).status;
  const open = async () => {
    const p = await context.newPage();
    const seen = watch(p);
    await p.goto(`${baseUrl}/admin`);
    return { p, seen };
  };
  const signIn = async (p: Page, token: string) => {
    await p.getByLabel('Admin token').fill(token);
    await p.getByRole('button', { name: 'Sign in' }).click();
  };
  const issue = async (source: string, name?: string, expires?: string): Promise<{ key: string; id: string }> => {
    await page.getByLabel('Source', { exact: true }).fill(source);
    if (name) await page.getByLabel(/^Name/).fill(name);
    if (expires) await page.getByLabel(/^Expires/).fill(expires);
    await page.getByRole('button', { name: 'Issue key' }).click();
    await page.getByTestId('secret-panel').waitFor();
    return { key: (await page.getByTestId('secret-key').textContent()) ?? '', id: (await page.getByTestId('secret-id').textContent()) ?? '' };
  };
  const row = (id: string): Locator => page.locator(`[data-testid="key-row"][data-key-id="${id}"]`);
  const status = (id: string, value: string) => row(id).getByTestId('key-status').filter({ hasText: value }).waitFor();

  beforeAll(async () => {
    const executablePath = requireChromium('admin console');
    // Push notifications to a receiver on loopback, retried once after a second.
    t = await startTestApp({ env: { OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true', OUTBOUND_WEBHOOKS_RETRY_SCHEDULE: '1s' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    userDataDir = await mkdtemp(join(tmpdir(), 'admin-console-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 900 },
      timezoneId: 'UTC',
    });
    // Every wait here is for a local page; a broken one should fail fast, well inside Jest's timeout.
    context.setDefaultTimeout(10000);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
    // Reported to the console, so `watch` sees any violation even if Chromium stopped logging its own line.
    await context.addInitScript(() =>
      document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`)),
    );
  });

  afterAll(async () => {
    await context?.close();
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
    expect(csp.get('frame-ancestors')).toBe("'none'");
    expect(res.headers.get('content-security-policy')).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('cache-control')).toBe('no-store');

    const html = await res.text();
    expect(html.match(/<script\b[^>]*>/g)).toEqual(['<script type="module" src="/admin/console.js">']);
    expect(html).not.toMatch(/\son[a-z]+\s*=/i);
    expect(html).not.toMatch(/\sstyle\s*=|<style/i);

    for (const [path, type] of [['/admin/console.js', /^text\/javascript/], ['/admin/console.css', /^text\/css/]] as const) {
      const asset = await fetch(`${baseUrl}${path}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get('content-type')).toMatch(type);
      expect(asset.headers.get('x-content-type-options')).toBe('nosniff');
    }

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

  it('signs in, keeping the token in sessionStorage only', async () => {
    ({ p: page, seen: problems } = await open());
    await signIn(page, TEST_ADMIN_TOKEN);
    await page.getByTestId('console-view').waitFor();
    expect(await page.getByTestId('sign-in-view').isVisible()).toBe(false);

    expect(await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_STORAGE_KEY)).toBe(TEST_ADMIN_TOKEN);
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage }))).not.toContain(TEST_ADMIN_TOKEN);
    expect(page.url()).toBe(`${baseUrl}/admin`);
    expect(await page.evaluate(() => document.cookie)).toBe('');
    expect(JSON.stringify(await context.cookies())).not.toContain(TEST_ADMIN_TOKEN);
    expect(problems).toEqual([]);
  });

  it('issues a key, shows it once, lists it, and revokes it through the confirmation dialog', async () => {
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
    await row(id).getByRole('button', { name: /^Revoke key/ }).click();
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain(`${key.slice(0, 12)}…${key.slice(-4)}`);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'hidden' });
    expect(await me(key)).toBe(200);

    await row(id).getByRole('button', { name: /^Revoke key/ }).click();
    await dialog.waitFor();
    await page.screenshot({ path: screenshotPath('admin-console-dialog.png') });
    await dialog.getByRole('button', { name: 'Revoke key', exact: true }).click();
    await dialog.waitFor({ state: 'hidden' });
    await status(id, 'REVOKED');
    expect(await row(id).getByRole('button').count()).toBe(0);
    expect(await me(key)).toBe(401);

    const audit = page.locator(`[data-testid="audit-row"][data-key-id="${id}"]`);
    await audit.filter({ hasText: 'api_key.revoked' }).waitFor();
    expect(await audit.filter({ hasText: 'api_key.created' }).count()).toBe(1);
    expect(await audit.first().textContent()).toContain('127.0.0.1');
    expect(await audit.first().getByTestId('audit-key-label').textContent()).toBe(`${key.slice(0, 12)}…${key.slice(-4)}`);

    expect(problems).toEqual([]);
  });

  it('rotates a key: the successor is shown once and works, the old key stops after a grace of 0', async () => {
    const markup = '<img src=x onerror="window.pwned=1">';
    const old = await issue('browser-rotate', markup);
    await page.getByRole('button', { name: 'I have stored it' }).click();
    // Data is text: the name shows literally and nothing in it runs.
    await row(old.id).getByText(markup, { exact: true }).waitFor();
    expect(await page.locator('[data-testid="keys-table"] img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();

    await row(old.id).getByRole('button', { name: /^Rotate key/ }).click();
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
    expect(problems).toEqual([]);
  });

  it('filters the keys by source, offering every source that has keys', async () => {
    const filter = page.getByTestId('filter-source');
    const options = await filter.locator('option').evaluateAll((all) => all.map((o) => (o as HTMLOptionElement).value));
    expect(options).toEqual(expect.arrayContaining(['', 'browser-e2e', 'browser-rotate']));
    const groups = () => page.locator('[data-testid="key-group"]').evaluateAll((all) => all.map((g) => g.getAttribute('data-source')));

    await filter.selectOption('browser-rotate');
    await page.locator('[data-testid="key-group"][data-source="browser-e2e"]').waitFor({ state: 'detached' });
    expect(await groups()).toEqual(['browser-rotate']);

    await filter.selectOption('');
    await page.locator('[data-testid="key-group"][data-source="browser-e2e"]').waitFor();
    expect(await groups()).toEqual(expect.arrayContaining(['browser-e2e', 'browser-rotate']));
    expect(problems).toEqual([]);
  });

  it('shows the bank webhook deliveries with their outcome, and filters them', async () => {
    const client = await newSourceWithKey(t.app, 'browser-webhooks');
    await postDocument(t.app, client.key, documentBody(client.source, { providerReference: 'PAY-BROWSER-1' }));
    const applied = { eventId: 'evt-browser-applied', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'PAY-BROWSER-1' };
    const unmatched = { eventId: 'evt-browser-unmatched', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'PAY-NOBODY' };
    for (const event of [applied, unmatched]) expect((await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event))).statusCode).toBe(200);

    await page.getByTestId('refresh').click();
    const rowOf = (eventId: string) => page.locator(`[data-testid="webhook-row"][data-event-id="${eventId}"]`);
    await rowOf(applied.eventId).waitFor();
    expect(await rowOf(applied.eventId).getAttribute('data-outcome')).toBe('applied');
    expect(await rowOf(unmatched.eventId).getAttribute('data-outcome')).toBe('unmatched');
    expect(await rowOf(unmatched.eventId).textContent()).toContain('PAY-NOBODY');

    await page.getByTestId('filter-outcome').selectOption('unmatched');
    await rowOf(applied.eventId).waitFor({ state: 'detached' });
    const outcomes = await page.locator('[data-testid="webhook-row"]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-outcome')));
    expect(outcomes.length).toBeGreaterThan(0);
    expect(new Set(outcomes)).toEqual(new Set(['unmatched']));
    await page.getByTestId('webhooks-table').screenshot({ path: screenshotPath('admin-console-webhooks.png') });
    await page.getByTestId('filter-outcome').selectOption('');
    expect(problems).toEqual([]);
  });

  it('lists push endpoints and failed deliveries, and retries one with the Retry button', async () => {
    const receiver = await new WebhookReceiver(() => ({ status: 500 })).start();
    try {
      const client = await newSourceWithKey(t.app, 'browser-push');
      const registered = await t.app.inject({
        method: 'POST',
        url: '/api/v1/webhook-endpoints',
        headers: { 'x-api-key': client.key, 'x-idempotency-key': newIdempotencyKey() },
        payload: { url: receiver.url, eventTypes: ['document.created'] },
      });
      expect(registered.statusCode).toBe(201);
      await postDocument(t.app, client.key, documentBody(client.source));
      const failedId = await waitFor(async () => {
        const { rows } = await t.db.query(`SELECT id FROM outbound_deliveries WHERE source = $1 AND status = 'failed'`, [client.source]);
        return rows[0]?.id as string | undefined;
      }, 'the delivery to fail');

      await page.getByTestId('refresh').click();
      const endpointRow = page.locator(`[data-testid="push-endpoint-row"][data-endpoint-id="${registered.json().id}"]`);
      await endpointRow.waitFor();
      expect(await endpointRow.textContent()).toContain(receiver.url);
      const deliveryRow = page.locator(`[data-testid="push-delivery-row"][data-delivery-id="${failedId}"]`);
      await deliveryRow.waitFor();
      expect(await deliveryRow.getAttribute('data-status')).toBe('failed');
      expect(await deliveryRow.textContent()).toContain('HTTP 500');
      await page.getByTestId('push-section').screenshot({ path: screenshotPath('admin-console-push.png') });

      receiver.respond = () => ({ status: 200 });
      await deliveryRow.getByTestId('push-retry').click();
      await page.getByTestId('notice').filter({ hasText: `Delivery ${failedId}` }).waitFor();
      await deliveryRow.waitFor({ state: 'detached' });
      await waitFor(async () => (await t.db.query(`SELECT status FROM outbound_deliveries WHERE id = $1`, [failedId])).rows[0].status === 'succeeded', 'the retried delivery');
      await page.getByTestId('filter-delivery-status').selectOption('succeeded');
      await page.locator(`[data-testid="push-delivery-row"][data-delivery-id="${failedId}"][data-status="succeeded"]`).waitFor();
      await page.getByTestId('filter-delivery-status').selectOption('failed');
      expect(problems).toEqual([]);
    } finally {
      await receiver.stop();
    }
  });

  it('shows API validation errors next to the form and a rotate grace period out of range in the dialog', async () => {
    await page.getByLabel('Source', { exact: true }).fill('Not A Source!');
    await page.getByRole('button', { name: 'Issue key' }).click();
    const error = page.getByTestId('issue-error');
    await error.filter({ hasText: 'Source: must be 2-63 characters' }).waitFor();
    expect(await page.getByLabel('Source', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByTestId('secret-panel').isVisible()).toBe(false);
    // Correcting the field takes its error away before anything is sent again.
    await page.getByLabel('Source', { exact: true }).fill('browser-grace');
    await error.waitFor({ state: 'hidden' });
    expect(await page.getByLabel('Source', { exact: true }).getAttribute('aria-invalid')).toBeNull();

    // datetime-local is local time (UTC in this browser); the API gets the instant.
    const { id } = await issue('browser-grace', undefined, '2031-05-04T10:30');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    expect(await error.isVisible()).toBe(false);
    expect(await row(id).locator('time[datetime="2031-05-04T10:30:00.000Z"]').textContent()).toBe('2031-05-04 10:30 UTC');
    await row(id).getByRole('button', { name: /^Rotate key/ }).click();
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
    expect(await row(id).getByRole('button', { name: /^Rotate key/ }).count()).toBe(0);
    expect(await row(id).getByRole('button', { name: /^Revoke key/ }).count()).toBe(1);
    await page.screenshot({ path: screenshotPath('admin-console.png'), fullPage: true });
    expect(problems.filter((s) => !REFUSED_FETCH.test(s))).toEqual([]);
  });

  it('returns to the prompt with a message when the API answers 401 mid-session, and signs out on request', async () => {
    await page.evaluate((k) => sessionStorage.setItem(k, 'a-token-that-stopped-working'), TOKEN_STORAGE_KEY);
    await page.reload();
    await page.getByTestId('sign-in-message').filter({ hasText: 'signed out' }).waitFor();
    expect(await page.getByTestId('console-view').isVisible()).toBe(false);
    expect(await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_STORAGE_KEY)).toBeNull();

    await signIn(page, TEST_ADMIN_TOKEN);
    await page.getByTestId('console-view').waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByTestId('sign-in-view').waitFor();
    expect(await page.evaluate((k) => sessionStorage.getItem(k), TOKEN_STORAGE_KEY)).toBeNull();
    expect(await page.locator('[data-testid="key-row"]').count()).toBe(0);
    expect(problems.filter((s) => !REFUSED_FETCH.test(s))).toEqual([]);
  });

  it('counts one wrong sign-in once against the lockout, and one stale stored token once', async () => {
    const failures = async () => Number((await t.db.query('SELECT coalesce(sum(failures), 0) AS n FROM admin_auth_failures')).rows[0].n);
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

  // Last: the lockout refuses this address, the right token included, for the rest of the minute.
  it('shows Retry-After when too many wrong tokens lock the address out (429)', async () => {
    const message = page.getByTestId('sign-in-message');
    for (let attempt = 0; attempt < 15; attempt++) {
      await signIn(page, `wrong-token-${attempt}`);
      await page.getByRole('button', { name: 'Sign in' }).and(page.locator(':not([disabled])')).waitFor();
      if ((await message.textContent())?.includes('Too many failed')) break;
    }
    expect(await message.textContent()).toMatch(/Too many failed admin sign-ins .* Try again in \d+ seconds\./);
    expect(await page.getByTestId('console-view').isVisible()).toBe(false);
    expect(problems.filter((s) => !REFUSED_FETCH.test(s))).toEqual([]);
  });
});

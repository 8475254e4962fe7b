import { mkdtemp, rm } from 'node:fs/promises';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Browser, chromium } from 'playwright-core';
import { BROWSER_TIMEOUT_MS, describeWithBrowser, requireChromium, screenshotPath } from '../support/browser.js';
import { startTestApp, TestApp } from '../support/test-app.js';

/** Swagger UI must keep working under the Content-Security-Policy every response carries. */
describeWithBrowser('OpenAPI UI')('the OpenAPI UI at /docs in a real browser', () => {
  let t: TestApp;
  let browser: Browser;
  let baseUrl: string;
  let userDataDir: string;

  beforeAll(async () => {
    const executablePath = requireChromium('OpenAPI UI');
    t = await startTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    userDataDir = await mkdtemp(join(tmpdir(), 'docs-ui-chromium-'));
    browser = await chromium.launch({
      executablePath,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
      timeout: BROWSER_TIMEOUT_MS,
    });
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
  });

  it('renders the operations with no policy violation', async () => {
    const page = await browser.newPage();
    page.setDefaultTimeout(BROWSER_TIMEOUT_MS);
    const violations: string[] = [];
    await page.addInitScript(() =>
      document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`)),
    );
    const scriptErrors: string[] = [];
    page.on('pageerror', (error) => scriptErrors.push(error.message));
    page.on('console', (message) => {
      if (/Content Security Policy|CSP violation/i.test(message.text())) violations.push(message.text());
    });
    const response = await page.goto(`${baseUrl}/docs`);
    expect(response?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    await page.locator('.swagger-ui .info .title').filter({ hasText: 'Tax Document Gateway' }).waitFor();
    await page.locator('.opblock-summary-path', { hasText: '/api/v1/documents' }).first().waitFor();
    await page.screenshot({ path: screenshotPath('docs-ui.png') });
    expect(violations).toEqual([]);
    expect(scriptErrors).toEqual([]);
    await page.close();
  });
});

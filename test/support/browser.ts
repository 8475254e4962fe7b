import { accessSync, constants, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

const ON_PATH = ['chromium', 'chromium-browser', 'google-chrome'];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Chromium as Playwright installs it (`npx playwright install chromium`), newest build first. */
function playwrightCache(): string | undefined {
  const cache = process.env.PLAYWRIGHT_BROWSERS_PATH || join(homedir(), '.cache', 'ms-playwright');
  if (!existsSync(cache)) return undefined;
  const builds = readdirSync(cache)
    .filter((d) => /^chromium-\d+$/.test(d))
    .sort((a, b) => Number(b.slice(9)) - Number(a.slice(9)));
  return builds
    .flatMap((build) => ['chrome-linux64/chrome', 'chrome-linux/chrome', 'chrome-mac/Chromium.app/Contents/MacOS/Chromium'].map((p) => join(cache, build, p)))
    .find(executable);
}

/** A Chromium for the browser tests: CHROME_PATH, then chromium / chromium-browser / google-chrome on PATH, then Playwright's cache. */
export function findChromium(): string | undefined {
  if (process.env.CHROME_PATH) return process.env.CHROME_PATH;
  const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  for (const name of ON_PATH) {
    const found = dirs.map((dir) => join(dir, name)).find(executable);
    if (found) return found;
  }
  return playwrightCache();
}

export const HOW_TO_GET_CHROMIUM =
  'install one (Debian/Ubuntu: apt-get install chromium; or npx playwright install chromium) or set CHROME_PATH to a Chrome/Chromium executable';

/**
 * `describe` for a suite that needs Chromium. Without one it is skipped with one loud line (a skipped
 * browser test is easy to miss in a green run), except under CI=true, where it runs and `requireChromium`
 * in its beforeAll fails it.
 */
export function describeWithBrowser(what: string): jest.Describe {
  if (findChromium() || process.env.CI === 'true') return describe;
  process.stderr.write(`\n*** SKIPPING the ${what} browser test: no Chromium found. To run it, ${HOW_TO_GET_CHROMIUM}. ***\n\n`);
  return describe.skip;
}

/** The Chromium to launch; fails the suite, naming how to get one, when there is none. */
export function requireChromium(what: string): string {
  const chromium = findChromium();
  if (!chromium) throw new Error(`CI=true and no Chromium was found for the ${what} test: ${HOW_TO_GET_CHROMIUM}`);
  return chromium;
}

/**
 * How long a browser step (a launch, a navigation, a locator) may take before it fails: a ceiling for a page that
 * never shows what is awaited, not a measure; a busy two-core machine renders several times slower than an idle one.
 */
export const BROWSER_TIMEOUT_MS = 90_000;

/** Where a browser test writes a screenshot: inside the checkout (test-results/screenshots), for a person to look at. */
export function screenshotPath(name: string): string {
  const dir = join(import.meta.dirname, '..', '..', 'test-results', 'screenshots');
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}

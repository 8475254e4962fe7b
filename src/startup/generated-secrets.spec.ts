import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../config/app-config.js';
import { resolveStartupSecrets } from './generated-secrets.js';
import { startupBanner } from './banner.js';

describe('secrets on start-up', () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'gateway-secrets-'));
  });
  afterEach(() => rm(dataDir, { recursive: true, force: true }));

  it('generates each unset secret once into DATA_DIR (mode 0600) and reuses it', async () => {
    const first = loadConfig({ DATA_DIR: dataDir });
    const sources = await resolveStartupSecrets(first);
    expect(sources).toEqual({
      adminToken: { file: join(dataDir, 'admin-token'), generated: true },
      webhookSecret: { file: join(dataDir, 'bank-webhook-secret'), generated: true },
      archiveSigningKey: { file: join(dataDir, 'archive-signing-key.pem'), generated: true },
    });
    expect(first.ADMIN_TOKEN).toMatch(/^[\w-]{43}$/);
    expect(first.BANK_WEBHOOK_SECRET).toMatch(/^[\w-]{43}$/);
    expect(first.ADMIN_TOKEN).not.toBe(first.BANK_WEBHOOK_SECRET);
    expect(createPrivateKey(first.ARCHIVE_SIGNING_KEY!).asymmetricKeyType).toBe('ed25519');
    for (const file of ['admin-token', 'bank-webhook-secret', 'archive-signing-key.pem']) expect((await stat(join(dataDir, file))).mode & 0o777).toBe(0o600);

    const again = loadConfig({ DATA_DIR: dataDir });
    expect(await resolveStartupSecrets(again)).toEqual({
      adminToken: { file: join(dataDir, 'admin-token'), generated: false },
      webhookSecret: { file: join(dataDir, 'bank-webhook-secret'), generated: false },
      archiveSigningKey: { file: join(dataDir, 'archive-signing-key.pem'), generated: false },
    });
    expect([again.ADMIN_TOKEN, again.BANK_WEBHOOK_SECRET, again.ARCHIVE_SIGNING_KEY]).toEqual([
      first.ADMIN_TOKEN,
      first.BANK_WEBHOOK_SECRET,
      first.ARCHIVE_SIGNING_KEY,
    ]);
  });

  it('creates no DATA_DIR when every secret is set', async () => {
    const missing = join(dataDir, 'not-there');
    const config = loadConfig({
      DATA_DIR: missing,
      ADMIN_TOKEN: 'an-admin-token-from-the-env',
      BANK_WEBHOOK_SECRET: 'a-webhook-secret-from-env',
      ARCHIVE_SIGNING_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    });
    expect(await resolveStartupSecrets(config)).toEqual({
      adminToken: { variable: 'ADMIN_TOKEN' },
      webhookSecret: { variable: 'BANK_WEBHOOK_SECRET' },
      archiveSigningKey: { variable: 'ARCHIVE_SIGNING_KEY' },
    });
    await expect(stat(missing)).rejects.toThrow('ENOENT');
  });

  it('prefers the variables, writing no file for them, and replaces an emptied file', async () => {
    await writeFile(join(dataDir, 'bank-webhook-secret'), '\n');
    const config = loadConfig({ DATA_DIR: dataDir, ADMIN_TOKEN: 'an-admin-token-from-the-env' });
    const sources = await resolveStartupSecrets(config);
    expect(sources.adminToken).toEqual({ variable: 'ADMIN_TOKEN' });
    expect(config.ADMIN_TOKEN).toBe('an-admin-token-from-the-env');
    await expect(stat(join(dataDir, 'admin-token'))).rejects.toThrow('ENOENT');
    expect(config.BANK_WEBHOOK_SECRET).toMatch(/^[\w-]{43}$/);
    expect((await readFile(join(dataDir, 'bank-webhook-secret'), 'utf8')).trim()).toBe(config.BANK_WEBHOOK_SECRET);
  });

  it('names where each secret is in the banner, never the secret, with a usable host', async () => {
    const config = loadConfig({ DATA_DIR: dataDir, BANK_WEBHOOK_SECRET: 'a-webhook-secret-from-env' });
    const banner = startupBanner(config, 3000, await resolveStartupSecrets(config));
    expect(banner).toContain('ready on http://localhost:3000');
    expect(banner).toContain(`Admin token          in ${join(dataDir, 'admin-token')} (generated)`);
    expect(banner).toContain('Bank webhook secret  set, from BANK_WEBHOOK_SECRET');
    expect(banner).not.toContain(config.ADMIN_TOKEN);
    expect(banner).not.toContain('a-webhook-secret-from-env');
    // Says "generated" only on the start that generated it; later starts read the same file.
    const restarted = startupBanner(config, 3000, await resolveStartupSecrets(loadConfig({ DATA_DIR: dataDir })));
    expect(restarted).toContain(`Admin token          read from ${join(dataDir, 'admin-token')}\n`);
    expect(restarted).toContain(`Bank webhook secret  set, in ${join(dataDir, 'bank-webhook-secret')} (generated)`);
    expect(restarted).not.toContain('admin-token (generated)');
    expect(
      startupBanner(loadConfig({ HOST: '::1' }), 8080, {
        adminToken: { variable: 'ADMIN_TOKEN' },
        webhookSecret: { variable: 'BANK_WEBHOOK_SECRET' },
        archiveSigningKey: { variable: 'ARCHIVE_SIGNING_KEY' },
      }),
    ).toContain('http://[::1]:8080/admin');
  });
});

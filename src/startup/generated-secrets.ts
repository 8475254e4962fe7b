import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { AppConfig } from '../config/app-config.js';

/**
 * Where a secret came from: the environment, or a file under DATA_DIR, which this start either
 * generated or read (made by an earlier start, by another instance sharing DATA_DIR, or by hand).
 */
export type SecretSource = { variable: string } | { file: string; generated: boolean };

export interface StartupSecrets {
  adminToken: SecretSource;
  webhookSecret: SecretSource;
  archiveSigningKey: SecretSource;
}

export const ADMIN_TOKEN_FILE = 'admin-token';
export const WEBHOOK_SECRET_FILE = 'bank-webhook-secret';
export const ARCHIVE_SIGNING_KEY_FILE = 'archive-signing-key.pem';

const randomSecret = () => randomBytes(32).toString('base64url');
/** An Ed25519 private key as PKCS#8 PEM, what ARCHIVE_SIGNING_KEY holds. */
const ed25519Key = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString().trim();

async function readOrCreate(file: string, make: () => string): Promise<{ secret: string; generated: boolean }> {
  const existing = await readFile(file, 'utf8').catch(() => null);
  if (existing?.trim()) return { secret: existing.trim(), generated: false };
  const secret = make();
  // 'wx' fails if another instance created it meanwhile: then theirs is the one both use. An empty
  // file (truncated by hand) is replaced.
  const generated = await writeFile(file, `${secret}\n`, { mode: 0o600, flag: existing === null ? 'wx' : 'w' }).then(
    () => true,
    (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
      return false;
    },
  );
  return { secret: (await readFile(file, 'utf8')).trim(), generated };
}

/**
 * ADMIN_TOKEN, BANK_WEBHOOK_SECRET and ARCHIVE_SIGNING_KEY when set; otherwise each is generated once into DATA_DIR (mode
 * 0600) and reused on every restart, so a restart never signs the administrator out and the
 * README's examples can read them from there. Fills `config` in place. With all set, DATA_DIR is not
 * touched (a container with a read-only root filesystem and a configured database writes nothing).
 */
export async function resolveStartupSecrets(config: AppConfig): Promise<StartupSecrets> {
  const dataDir = resolve(config.DATA_DIR);
  const source = async (variable: 'ADMIN_TOKEN' | 'BANK_WEBHOOK_SECRET' | 'ARCHIVE_SIGNING_KEY', name: string, make = randomSecret): Promise<SecretSource> => {
    if (config[variable]) return { variable };
    await mkdir(dataDir, { recursive: true });
    const file = join(dataDir, name);
    const { secret, generated } = await readOrCreate(file, make);
    config[variable] = secret;
    return { file, generated };
  };
  return {
    adminToken: await source('ADMIN_TOKEN', ADMIN_TOKEN_FILE),
    webhookSecret: await source('BANK_WEBHOOK_SECRET', WEBHOOK_SECRET_FILE),
    archiveSigningKey: await source('ARCHIVE_SIGNING_KEY', ARCHIVE_SIGNING_KEY_FILE, ed25519Key),
  };
}

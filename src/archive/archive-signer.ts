import { Injectable, Logger } from '@nestjs/common';
import { createPrivateKey, generateKeyPairSync, KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { ARCHIVE_SIGNING_KEY_FILE } from '../startup/generated-secrets.js';
import { AppConfig } from '../config/app-config.js';
import type { ArchiveCheckpointEntity } from './archive-checkpoint.entity.js';
import { checkpointText, NoteSigner, noteSigner } from './signed-note.js';

/**
 * The origin of the archive's checkpoints, also its key's name. ARCHIVE_ORIGIN when set; else the one the
 * log's checkpoints already carry, so that every instance (and every later pod) signs under the name the
 * first one chose; for the first checkpoint, the host of PUBLIC_URL or the host name, followed by /archive.
 */
export function archiveOrigin(config: AppConfig, latest: Pick<ArchiveCheckpointEntity, 'note'> | null): string {
  if (config.ARCHIVE_ORIGIN) return config.ARCHIVE_ORIGIN;
  if (latest) return latest.note.slice(0, latest.note.indexOf('\n'));
  const host = config.PUBLIC_URL ? new URL(config.PUBLIC_URL).host : hostname();
  return `${host.replace(/[\s+]/g, '-') || 'localhost'}/archive`;
}

/** The configured signing key: ARCHIVE_SIGNING_KEY, else the one generated into DATA_DIR, else null. */
async function configuredKey(config: AppConfig): Promise<KeyObject | null> {
  const pem = config.ARCHIVE_SIGNING_KEY ?? (await readFile(join(resolve(config.DATA_DIR), ARCHIVE_SIGNING_KEY_FILE), 'utf8').catch(() => null));
  return pem?.trim() ? createPrivateKey(pem) : null;
}

/**
 * The verifier key of the signing key a gateway with this configuration uses, under the log's origin; null
 * when no key is configured here (the CLI on another machine: the operator passes --key).
 */
export async function archiveVerifierKey(config: AppConfig, latest: Pick<ArchiveCheckpointEntity, 'note'> | null): Promise<string | null> {
  const key = await configuredKey(config);
  return key ? noteSigner(archiveOrigin(config, latest), key).verifierKey : null;
}

/** Signs the archive's checkpoints with ARCHIVE_SIGNING_KEY (src/startup/generated-secrets.ts makes one when it is unset). */
@Injectable()
export class ArchiveSigner {
  private readonly logger = new Logger('Archive');
  private readonly key: KeyObject;
  private readonly signers = new Map<string, NoteSigner>();

  constructor(private readonly config: AppConfig) {
    if (config.ARCHIVE_SIGNING_KEY) this.key = createPrivateKey(config.ARCHIVE_SIGNING_KEY);
    else {
      // Only an application built without the start-up's secrets (a test) gets here: its checkpoints are
      // signed with a key that ends with the process, which the sealer will not mix with another key's.
      this.key = generateKeyPairSync('ed25519').privateKey;
      this.logger.warn('ARCHIVE_SIGNING_KEY is not set: checkpoints are signed with a key of this process only');
    }
  }

  /** The origin the next checkpoint is signed under, after the log's latest checkpoint. */
  originAfter(latest: Pick<ArchiveCheckpointEntity, 'note'> | null): string {
    return archiveOrigin(this.config, latest);
  }

  /** The note verifier key clients check checkpoints of `origin` with (GET /api/v1/archive/public-key). */
  verifierKey(origin: string): string {
    return this.signerOf(origin).verifierKey;
  }

  /** The signed checkpoint note of a tree. */
  checkpoint(origin: string, size: number, rootHash: Buffer): string {
    return this.signerOf(origin).sign(checkpointText({ origin, size, rootHash }));
  }

  private signerOf(origin: string): NoteSigner {
    let signer = this.signers.get(origin);
    if (!signer) this.signers.set(origin, (signer = noteSigner(origin, this.key)));
    return signer;
  }
}

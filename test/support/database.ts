import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { waitFor } from './processes.js';

function serverUrl(): string {
  const url = process.env.TEST_SERVER_URL;
  if (!url) throw new Error('TEST_SERVER_URL is not set: e2e specs run under test/support/global-setup.ts');
  return url;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function onServer<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: withDatabase(serverUrl(), 'postgres') });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A fresh, empty database for one test file, so files never see each other's rows. */
export async function createTestDatabase(): Promise<string> {
  const name = `gw_test_${process.env.JEST_WORKER_ID ?? '0'}_${randomBytes(4).toString('hex')}`;
  await onServer((client) => client.query(`CREATE DATABASE ${name}`));
  return withDatabase(serverUrl(), name);
}

export async function dropTestDatabase(url: string): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  await onServer((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
}

/**
 * Makes the create of the document with `externalId` stop right after its insert, inside its transaction
 * (document and feed event written, not committed), until `release`. `held` resolves once it is waiting.
 * `remove` releases it and drops the trigger; call it in a `finally`.
 */
export function holdDocumentInsert(db: Client, databaseUrl: string, externalId: string) {
  return holdInsert(db, databaseUrl, 'documents', `NEW.external_id = '${externalId}'`);
}

/** The same for the transaction that inserts a row into `table` for which `condition` (on NEW) holds. */
export async function holdInsert(db: Client, databaseUrl: string, table: string, condition: string) {
  // Advisory locks are cluster-wide: a key of its own, so another test file's hold is never taken for this one.
  const lock = randomBytes(4).readUInt32BE() >>> 1;
  const holder = new Client({ connectionString: databaseUrl });
  await holder.connect();
  try {
    await holder.query('SELECT pg_advisory_lock($1)', [lock]);
    await db.query(`CREATE FUNCTION hold_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_advisory_xact_lock(${lock}); RETURN NULL; END $$`);
    await db.query(`CREATE TRIGGER hold_insert AFTER INSERT ON ${table} FOR EACH ROW WHEN (${condition}) EXECUTE FUNCTION hold_insert()`);
  } catch (error) {
    // Not set up, so the caller gets no `remove`: the lock must not outlive the test.
    await holder.end();
    throw error;
  }
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await holder.end();
  };
  return {
    held: () =>
      waitFor(
        async () => (await db.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = $1`, [lock])).rowCount === 1,
        `the insert into ${table} waiting`,
        10_000,
      ),
    release,
    remove: async () => {
      await release();
      await db.query(`DROP TRIGGER IF EXISTS hold_insert ON ${table}`);
      await db.query('DROP FUNCTION IF EXISTS hold_insert()');
    },
  };
}

/**
 * `work` for each item, one after another: a pg Client runs one query at a time, and queries handed to it
 * while another runs are queued by a mechanism pg deprecates (and pg 9 removes).
 */
export async function inSequence<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (const item of items) results.push(await work(item));
  return results;
}

import { join } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase, dropTestDatabase, holdInsert } from '../support/database.js';
import { adminHeaders, documentBody, newIdempotencyKey, uniqueSource } from '../support/factories.js';
import { ROOT, Spawned, spawnNode, waitFor } from '../support/processes.js';
import { startReadyGateway, TEST_ARCHIVE_SIGNING_KEY } from '../support/test-app.js';

/**
 * Two instances sealing one archive while documents keep arriving: one is SIGKILLed in the middle of a
 * seal (its insert into archive_entries held by a trigger, its transaction open), and the other goes on.
 * Whether the killed seal's commit went through or not, every feed event ends up sealed exactly once, in
 * one gap-free tree that `tdg archive verify` finds clean.
 */
describe('the archive sealed by two instances, one killed mid-seal', () => {
  let databaseUrl: string;
  let db: Client;
  const gateways: Spawned[] = [];

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    db = new Client({ connectionString: databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    for (const gateway of gateways) if (gateway.child.exitCode === null) gateway.child.kill('SIGKILL');
    await db.end();
    await dropTestDatabase(databaseUrl);
  });

  it('seals every event once, whatever the killed seal did', async () => {
    const env = { ARCHIVE_SEAL_INTERVAL: 'PT1S', ARCHIVE_CHECKPOINT_INTERVAL: 'PT1S', RETENTION_INTERVAL_SECONDS: '3600' };
    const first = await startReadyGateway(databaseUrl, env);
    gateways.push(first.spawned);
    const issued = await fetch(`${first.url}/admin/api-keys`, {
      method: 'POST',
      headers: { ...adminHeaders, 'content-type': 'application/json' },
      body: JSON.stringify({ source: uniqueSource('arch') }),
    });
    const { key, source } = (await issued.json()) as { key: string; source: string };
    let base = first.url;
    let stop = false;
    let created = 0;
    // Documents keep arriving, at whichever instance is up, through everything below.
    const load = (async () => {
      while (!stop) {
        const res = await fetch(`${base}/api/v1/documents`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': key, 'x-idempotency-key': newIdempotencyKey() },
          body: JSON.stringify(documentBody(source)),
        }).catch(() => null);
        if (res?.status === 201) created++;
      }
    })();

    await waitFor(async () => (await db.query('SELECT 1 FROM archive_entries LIMIT 1')).rowCount === 1, 'a first seal');
    // Only the first instance runs: the next seal is its own, held inside its transaction.
    const hold = await holdInsert(db, databaseUrl, 'archive_entries', 'true');
    try {
      await hold.held();
      const second = await startReadyGateway(databaseUrl, env);
      gateways.push(second.spawned);
      base = second.url;
      first.spawned.child.kill('SIGKILL');
      expect(await first.spawned.exited).toBe('SIGKILL');
    } finally {
      await hold.remove();
    }
    const atKill = created;
    await waitFor(async () => created >= atKill + 20, 'documents created at the second instance');
    stop = true;
    await load;

    const [{ events }] = (await db.query<{ events: number }>('SELECT count(*)::int AS events FROM document_events')).rows;
    const sealed = await waitFor(async () => {
      const [row] = (
        await db.query<{ entries: number; distinct: number; top: number }>(
          'SELECT count(*)::int AS entries, count(DISTINCT event_id)::int AS distinct, coalesce(max(index), -1)::int AS top FROM archive_entries',
        )
      ).rows;
      return row.entries === events ? row : undefined;
    }, `all ${events} events sealed`);
    // Once each, and the tree without gaps.
    expect(sealed).toEqual({ entries: events, distinct: events, top: events - 1 });
    const [{ unsealed }] = (
      await db.query<{ unsealed: number }>(
        'SELECT count(*)::int AS unsealed FROM document_events e WHERE NOT EXISTS (SELECT 1 FROM archive_entries a WHERE a.event_id = e.id)',
      )
    ).rows;
    expect(unsealed).toBe(0);

    const verify = spawnNode([join(ROOT, 'dist', 'cli.js'), 'archive', 'verify', '--json'], {
      DATABASE_URL: databaseUrl,
      ARCHIVE_SIGNING_KEY: TEST_ARCHIVE_SIGNING_KEY,
    });
    expect(await verify.closed).toBe(0);
    expect(JSON.parse(verify.stdout())).toMatchObject({ treeSize: events, findings: [] });
  });
});

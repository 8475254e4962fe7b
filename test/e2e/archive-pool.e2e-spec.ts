import { Client } from 'pg';
import { PROVIDER_REFERENCE_LOCK_NAMESPACE } from '../../src/documents/documents.repository.js';
import { documentBody, newSourceWithKey, postDocument } from '../support/factories.js';
import { waitFor } from '../support/processes.js';
import { startTestApp, TestApp } from '../support/test-app.js';

/**
 * The sealer shares the request pool. With every connection but one held by a request that waits (here on
 * a providerReference's lock, which a peer holds), a seal must do all its work on the one connection it
 * took: a seal that asked the pool for a second would wait for the waiting requests, and the requests that
 * come next for the seal.
 */
describe('the archive sealed on the last free connection of the pool', () => {
  let t: TestApp;
  let peer: Client;

  beforeAll(async () => {
    // Long timeouts: the waiting create must still be waiting when the seal runs.
    t = await startTestApp({
      env: { DB_POOL_SIZE: '2', DB_LOCK_TIMEOUT_MS: '60000', DB_STATEMENT_TIMEOUT_MS: '60000', ARCHIVE_SEAL_INTERVAL: 'PT1S', RATE_LIMIT_PER_MINUTE: '100000' },
    });
    peer = new Client({ connectionString: t.databaseUrl, application_name: 'lock-holding-peer' });
    await peer.connect();
  });
  afterAll(async () => {
    await peer.end();
    await t.close();
  });

  it('seals while the other connection waits on a lock, and the waiting create completes once it is released', async () => {
    const { key, source } = await newSourceWithKey(t.app);
    // An advisory lock, not a row lock: it gives the peer no transaction id, so the feed's horizon does not stop at it.
    await peer.query('SELECT pg_advisory_lock($1::int, hashtext($2::varchar))', [PROVIDER_REFERENCE_LOCK_NAMESPACE, 'PAY-POOL-HELD']);
    const waiting = postDocument(t.app, key, documentBody(source, { providerReference: 'PAY-POOL-HELD' }));
    await waitFor(async () => {
      const { rows } = await t.db.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tax-document-gateway' AND wait_event_type = 'Lock'`,
      );
      return rows.length === 1;
    }, 'the create waiting on the lock');

    const created = await postDocument(t.app, key, documentBody(source, { providerReference: 'PAY-POOL-FREE' }));
    expect(created.statusCode).toBe(201);
    const sealed = await waitFor(async () => {
      const answer = await t.app.inject({
        method: 'GET',
        url: `/api/v1/documents/${created.json<{ id: string }>().id}/archive`,
        headers: { 'x-api-key': key },
      });
      const entries = answer.json<{ entries: Array<{ index: number | null }> }>().entries;
      return entries.length === 1 && entries[0].index !== null ? entries : undefined;
    }, 'the new document sealed');
    expect(sealed).toHaveLength(1);
    expect(t.logs()).not.toContain('Sealing the archive failed');

    await peer.query('SELECT pg_advisory_unlock($1::int, hashtext($2::varchar))', [PROVIDER_REFERENCE_LOCK_NAMESPACE, 'PAY-POOL-HELD']);
    expect((await waiting).statusCode).toBe(201);
  });
});

import {
  cancelDocument,
  documentBody,
  FeedEvent,
  feedOnceReady,
  IssuedKey,
  newIdempotencyKey,
  newSourceWithKey,
  postDocument,
  sendWebhook,
  signedWebhook,
} from '../support/factories.js';
import { waitFor } from '../support/processes.js';
import { startTestApp, TEST_WEBHOOK_SECRET, TestApp } from '../support/test-app.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

const ENV = { RETENTION_INTERVAL_SECONDS: '1', OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true' };
const TABLES = ['document_events', 'outbound_deliveries', 'outbound_delivery_attempts', 'webhook_events', 'admin_audit_log'] as const;
type Table = (typeof TABLES)[number];
/** More old events than one batch holds (5000), so that the purge takes several and the instances can take turns. */
const BULK_EVENTS = 12_001;

/**
 * Retention with the default periods on two instances of one database, each purging every
 * second: rows are made old by dating them back, as time would. Whatever is past its period goes, in
 * batches, on whichever instance gets to a table first; the rest, and every document, stays; the feed pages
 * on across the purged range; the metric counts each row once.
 */
describe('retention on two instances', () => {
  let a: TestApp;
  let b: TestApp;
  let hook: WebhookReceiver;

  const purgedMetric = async (t: TestApp): Promise<Record<Table, number>> => {
    const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const value = (table: string) => Number(new RegExp(`^retention_purged_rows_total\\{table="${table}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
    return Object.fromEntries(TABLES.map((table) => [table, value(table)])) as Record<Table, number>;
  };
  const count = async (table: string, where = 'true') => (await a.db.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`)).rows[0].n as number;
  const feedAfter = async (key: IssuedKey, after: string) =>
    (await a.app.inject({ method: 'GET', url: `/api/v1/events?after=${after}&limit=100`, headers: { 'x-api-key': key.key } })).json<{
      data: FeedEvent[];
      nextCursor: string;
    }>();

  beforeAll(async () => {
    a = await startTestApp({ env: ENV });
    b = await startTestApp({ env: ENV, databaseUrl: a.databaseUrl });
    hook = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await hook?.stop();
  });

  it('exports retention_purged_rows_total for every table from the start', async () => {
    expect(await purgedMetric(a)).toEqual({ document_events: 0, outbound_deliveries: 0, outbound_delivery_attempts: 0, webhook_events: 0, admin_audit_log: 0 });
  });

  it('purges what is past its period, keeps the rest and every document, and counts each row once', async () => {
    // What production writes: a key (audited), a push endpoint, documents and status changes with their
    // deliveries and attempts, bank events; on both instances.
    const key = await newSourceWithKey(a.app);
    const endpoint = await b.app.inject({
      method: 'POST',
      url: '/api/v1/webhook-endpoints',
      headers: { 'x-api-key': key.key, 'x-idempotency-key': newIdempotencyKey() },
      payload: { url: hook.url },
    });
    expect(endpoint.statusCode).toBe(201);
    const documents: string[] = [];
    for (let i = 0; i < 6; i++) {
      const created = await postDocument(i % 2 ? b.app : a.app, key.key, documentBody(key.source));
      expect(created.statusCode).toBe(201);
      documents.push(created.json().id);
    }
    for (const id of [documents[1], documents[4]]) expect((await cancelDocument(a.app, key.key, id)).statusCode).toBe(200);
    // Three bank events, the first repeated by the bank (a duplicate, which goes with its event).
    for (const i of [0, 1, 2, 0]) {
      const delivery = signedWebhook(TEST_WEBHOOK_SECRET, {
        eventId: `evt-${key.source}-${i}`,
        eventType: 'PAYMENT_STATUS',
        status: 'PAID',
        providerReference: `none-${key.source}`,
      });
      expect((await sendWebhook(i % 2 ? b.app : a.app, delivery)).statusCode).toBe(200);
    }
    const feed = await feedOnceReady(a.app, key.key, (events) => events.length === 8 && events, 'the 8 events in the feed');
    await waitFor(async () => (await count('outbound_deliveries', `status = 'succeeded'`)) === 8, 'every push delivery to succeed');
    await newSourceWithKey(b.app); // a recent audit entry, kept

    // A client has read the first three events; the fourth will be purged before it reads on.
    const read = await a.app.inject({ method: 'GET', url: '/api/v1/events?limit=3', headers: { 'x-api-key': key.key } });
    const cursor = read.json().nextCursor as string;

    // Time passes, in one transaction so that no purge sees half of it: the first four events with their
    // deliveries and attempts 100 days old; the deliveries of the next two finished 40 days ago; the next
    // one still pending after 40 days; two bank events 100 days old (not the first one's recent repeat);
    // the first key's audit entry 500 days old; and a source with more old events than one batch takes.
    const old = feed.slice(0, 4).map((e) => e.id);
    const finished = feed.slice(4, 6).map((e) => e.id);
    const pending = feed[6].id;
    await a.db.query('BEGIN');
    await a.db.query(`UPDATE document_events SET created_at = now() - interval '100 days' WHERE id = ANY($1)`, [old]);
    await a.db.query(
      `UPDATE outbound_deliveries SET created_at = now() - interval '100 days', last_attempt_at = now() - interval '100 days' WHERE event_id = ANY($1)`,
      [old],
    );
    await a.db.query(
      `UPDATE outbound_deliveries SET created_at = now() - interval '40 days', last_attempt_at = now() - interval '40 days' WHERE event_id = ANY($1)`,
      [finished],
    );
    await a.db.query(
      `UPDATE outbound_deliveries SET status = 'pending', next_attempt_at = now() + interval '1 hour', created_at = now() - interval '40 days', last_attempt_at = now() - interval '40 days' WHERE event_id = $1`,
      [pending],
    );
    await a.db.query(`UPDATE webhook_events SET received_at = now() - interval '100 days' WHERE event_id = ANY($1) AND outcome <> 'duplicate'`, [
      [`evt-${key.source}-0`, `evt-${key.source}-1`],
    ]);
    await a.db.query(`UPDATE admin_audit_log SET created_at = now() - interval '500 days' WHERE target_id = $1`, [key.id]);
    await a.db.query(
      `WITH doc AS (
         INSERT INTO documents (source, external_id, type, taxpayer_tax_id, taxpayer_name, taxpayer_country, issue_date, currency, total_amount, tax_amount)
         VALUES ('bulk-old', 'INV-BULK', 'INVOICE', 'DE1', 'Muster GmbH', 'DE', '2026-01-01', 'EUR', 119, 19) RETURNING id)
       INSERT INTO document_events (source, document_id, type, status, created_at)
       SELECT 'bulk-old', doc.id, 'document.created', 'PENDING_PAYMENT', now() - interval '100 days' FROM doc, generate_series(1, $1)`,
      [BULK_EVENTS],
    );
    const attempts = await count(
      'outbound_delivery_attempts',
      `delivery_id IN (SELECT id FROM outbound_deliveries WHERE event_id = ANY('{${[...old, ...finished].join(',')}}'))`,
    );
    await a.db.query('COMMIT');
    expect(attempts).toBeGreaterThanOrEqual(6);
    const expected: Record<Table, number> = {
      document_events: old.length + BULK_EVENTS,
      outbound_deliveries: old.length + finished.length,
      outbound_delivery_attempts: attempts,
      webhook_events: 3,
      admin_audit_log: 1,
    };

    // Both instances purge every second; between them every row is counted exactly once.
    const sum = async () => {
      const [ma, mb] = await Promise.all([purgedMetric(a), purgedMetric(b)]);
      return Object.fromEntries(TABLES.map((table) => [table, ma[table] + mb[table]])) as Record<Table, number>;
    };
    await waitFor(async () => JSON.stringify(await sum()) === JSON.stringify(expected), 'the purge of every old row').catch(async (error) => {
      throw new Error(`${(error as Error).message}: purged ${JSON.stringify(await sum())}, expected ${JSON.stringify(expected)}`);
    });
    expect(await sum()).toEqual(expected);

    // What is within its period stays, and so does every document.
    expect(await count('document_events', `source = '${key.source}'`)).toBe(4);
    expect(await count('document_events', `source = 'bulk-old'`)).toBe(0);
    expect(await count('documents')).toBe(7);
    expect(await count('outbound_deliveries')).toBe(2);
    expect(await count('outbound_deliveries', `status = 'pending'`)).toBe(1);
    expect(await count('webhook_events')).toBe(1);
    expect(await count('admin_audit_log')).toBe(1);

    // The client's cursor points into the purged range: the feed goes on after it.
    expect((await feedAfter(key, cursor)).data.map((e) => e.id)).toEqual(feed.slice(4).map((e) => e.id));
    // A purged event's deliveries are gone from the client's delivery log too; the others are listed.
    const log = await a.app.inject({ method: 'GET', url: `/api/v1/webhook-endpoints/${endpoint.json().id}/deliveries`, headers: { 'x-api-key': key.key } });
    expect(
      log
        .json()
        .data.map((d: { eventId: string }) => d.eventId)
        .sort(),
    ).toEqual([feed[6].id, feed[7].id].sort());

    // Each batch took its tables' locks: no instance waited for or fought the other.
    for (const t of [a, b]) expect(t.logs()).not.toMatch(/Retention purge failed|deadlock/);
    expect(`${a.logs()}${b.logs()}`).toMatch(/"msg":"Retention purge"/);
  });
});

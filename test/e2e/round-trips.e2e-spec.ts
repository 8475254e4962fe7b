import { jest } from '@jest/globals';
import { Client, QueryConfig } from 'pg';
import { documentBody, newIdempotencyKey, newSourceWithKey, postDocument, sendWebhook, signedWebhook } from '../support/factories.js';
import { startTestApp, TestApp, TEST_WEBHOOK_SECRET } from '../support/test-app.js';

/**
 * Background jobs that may run during a request, by their statement's text; they are not the request's
 * work: key usage, the purges, the push delivery worker (its LISTEN connection may (re)subscribe at any time).
 */
const BACKGROUND =
  /^LISTEN|pg_notify|api_keys AS k SET last_used_at|DELETE FROM idempotency_records|admin_auth_failures|admin_sessions|admin_oidc_logins|outbound_deliver/;

/**
 * Every statement the gateway sends goes through pg's Client#query (its documented entry point); this
 * records what one request sends (the app runs in this process; the test's own connection is not used
 * meanwhile), by name, and groups them into round trips: statements sent before any answer to them has
 * arrived share one. Into `values` go the parameters each named statement was sent with.
 */
async function roundTripsOf(work: () => Promise<unknown>, values: Record<string, unknown[]> = {}): Promise<string[][]> {
  const trips: string[][] = [];
  let answered = true;
  const original = Client.prototype.query;
  const spy = jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
    const config = args[0] as string | QueryConfig;
    const text = typeof config === 'string' ? config : config.text;
    // A prepared statement by its name; anything else (TypeORM's own) by its first word.
    const name = (typeof config === 'string' ? undefined : config.name) ?? text.trim().split(/\s+/)[0];
    const result = (original as (...a: unknown[]) => unknown).apply(this, args);
    if (BACKGROUND.test(text)) return result;
    if (answered) trips.push([]);
    answered = false;
    trips.at(-1)!.push(name);
    values[name] = typeof config === 'string' ? [] : (config.values ?? []);
    const settle = () => (answered = true);
    (result as Promise<unknown>).then(settle, settle);
    return result;
  });
  try {
    await work();
  } finally {
    spy.mockRestore();
  }
  return trips;
}

describe('round trips per request on the hot paths (documented in docs/performance.md)', () => {
  let t: TestApp;
  let key: string;
  let source: string;

  beforeAll(async () => {
    // Retention's hourly run, not its first one a minute from now, whose statements BACKGROUND does not name.
    t = await startTestApp({ env: { RETENTION_INTERVAL_SECONDS: '3600' } });
    ({ key, source } = await newSourceWithKey(t.app));
  });
  afterAll(() => t.close());

  it('creates a document after the key look-ups in two round trips: BEGIN and the claim; the writes with the COMMIT', async () => {
    // Without a providerReference nothing can hold it or wait for it, so the decision reads nothing.
    const sent = await roundTripsOf(async () => expect((await postDocument(t.app, key, documentBody(source))).statusCode).toBe(201));
    expect(sent).toEqual([
      ['api-key-authenticate'],
      ['idempotency-record'],
      ['BEGIN', 'locks:idempotency-claim'],
      ['writes:document-insert+document-event-append+idempotency-store', 'COMMIT'],
    ]);
  });

  it('takes the providerReference lock with the claim, only once the claim is granted, before the read it guards', async () => {
    const providerReference = `PAY-rt-${newIdempotencyKey()}`;
    const values: Record<string, unknown[]> = {};
    const sent = await roundTripsOf(
      async () => expect((await postDocument(t.app, key, documentBody(source, { providerReference }))).statusCode).toBe(201),
      values,
    );
    expect(sent).toEqual([
      ['api-key-authenticate'],
      ['idempotency-record'],
      ['BEGIN', 'locks:idempotency-claim>document-provider-reference', 'document-create-findings'],
      ['writes:document-insert+document-event-append+idempotency-store', 'COMMIT'],
    ]);
    expect(values['locks:idempotency-claim>document-provider-reference']).toEqual([source, expect.any(String), providerReference]);
  });

  it('applies the bank events that waited for the document in the same transaction, and names what a duplicate repeats', async () => {
    const providerReference = `PAY-rt-${newIdempotencyKey()}`;
    const event = { eventId: `evt-${newIdempotencyKey()}`, eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference };
    expect((await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event))).statusCode).toBe(200);
    const body = documentBody(source, { providerReference });
    const waited = await roundTripsOf(async () => expect((await postDocument(t.app, key, body)).json().status).toBe('PAID'));
    // The waiting events are read with the rest of what the create decides on; the document is written as they leave it, with its events and their marks.
    expect(waited).toEqual([
      ['api-key-authenticate'],
      ['idempotency-record'],
      ['BEGIN', 'locks:idempotency-claim>document-provider-reference', 'document-create-findings'],
      [expect.stringMatching(/^writes:document-insert\+document-event-append\+b~/), 'COMMIT'],
    ]);
    // A create assumes its externalId and reference free; the constraint refuses the insert at commit, and the
    // request runs again, asking which is taken, and stores its 409 alone.
    const duplicate = await roundTripsOf(async () => expect((await postDocument(t.app, key, body)).statusCode).toBe(409));
    expect(duplicate).toEqual([
      ['api-key-authenticate'],
      ['idempotency-record'],
      ['BEGIN', 'locks:idempotency-claim>document-provider-reference', 'document-create-findings'],
      ['writes:document-insert+document-event-append+idempotency-store', 'COMMIT'],
      ['idempotency-record'],
      ['BEGIN', 'locks:idempotency-claim>document-provider-reference', 'document-create-findings-taken'],
      ['idempotency-store', 'COMMIT'],
    ]);
  });

  it('replays from the stored answer with one statement, opening no transaction; reads a document with two statements', async () => {
    const idempotencyKey = newIdempotencyKey();
    const body = documentBody(source);
    const created = await postDocument(t.app, key, body, idempotencyKey);
    const replay = await roundTripsOf(async () => expect((await postDocument(t.app, key, body, idempotencyKey)).headers['idempotent-replayed']).toBe('true'));
    expect(replay).toEqual([['api-key-authenticate'], ['idempotency-record']]);
    const read = await roundTripsOf(async () =>
      expect((await t.app.inject({ method: 'GET', url: `/api/v1/documents/${created.json().id}`, headers: { 'x-api-key': key } })).statusCode).toBe(200),
    );
    expect(read).toEqual([['api-key-authenticate'], ['document-find']]);
    // A path that is not a document id is a 404 without a document look-up.
    const notAnId = await roundTripsOf(async () =>
      expect((await t.app.inject({ method: 'GET', url: '/api/v1/documents/not-an-id', headers: { 'x-api-key': key } })).statusCode).toBe(404),
    );
    expect(notAnId).toEqual([['api-key-authenticate']]);
  });

  it('stores and applies a bank event in two round trips: BEGIN, the lock and what the decision reads; the writes with the COMMIT', async () => {
    const providerReference = `PAY-rt-${newIdempotencyKey()}`;
    await postDocument(t.app, key, documentBody(source, { providerReference }));
    const event = { eventId: `evt-${newIdempotencyKey()}`, eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference };
    const sent = await roundTripsOf(async () => expect((await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event))).statusCode).toBe(200));
    expect(sent).toEqual([
      ['BEGIN', 'locks:document-provider-reference', 'bank-event-receive-findings'],
      ['writes:document-change+document-event-append+bank-event-insert', 'COMMIT'],
    ]);
  });
});

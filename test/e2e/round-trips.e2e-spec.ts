import { Client, QueryConfig } from 'pg';
import { documentBody, newIdempotencyKey, newSourceWithKey, postDocument, sendWebhook, signedWebhook } from '../support/factories';
import { startTestApp, TestApp, TEST_WEBHOOK_SECRET } from '../support/test-app';

/**
 * Background jobs that may run during a request; they are not the request's work (LISTEN: the outbound
 * delivery worker's own connection, which may (re)subscribe at any time).
 */
const BACKGROUND = /^(api-key-usage|idempotency-purge|admin-auth-failures-purge|LISTEN|outbound-)/;

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
  Client.prototype.query = function (this: Client, ...args: unknown[]) {
    const config = args[0] as string | QueryConfig;
    const name = typeof config === 'string' ? config.trim().split(/\s+/)[0] : (config.name ?? config.text.trim().split(/\s+/)[0]);
    const result = (original as (...a: unknown[]) => unknown).apply(this, args);
    if (BACKGROUND.test(name)) return result;
    if (answered) trips.push([]);
    answered = false;
    trips.at(-1)!.push(name);
    values[name] = typeof config === 'string' ? [] : (config.values ?? []);
    const settle = () => (answered = true);
    (result as Promise<unknown>).then(settle, settle);
    return result;
  } as typeof Client.prototype.query;
  try {
    await work();
  } finally {
    Client.prototype.query = original;
  }
  return trips;
}

describe('round trips per request on the hot paths (documented in docs/performance.md)', () => {
  let t: TestApp;
  let key: string;
  let source: string;

  beforeAll(async () => {
    t = await startTestApp();
    ({ key, source } = await newSourceWithKey(t.app));
  });
  afterAll(() => t.close());

  it('creates a document in one statement after the key look-up: claim, document and event together, no BEGIN or COMMIT', async () => {
    const sent = await roundTripsOf(async () => expect((await postDocument(t.app, key, documentBody(source))).statusCode).toBe(201));
    expect(sent).toEqual([['api-key-authenticate'], ['document-create-claimed']]);
  });

  it('sends the providerReference lock, the create and their transaction together, in one round trip', async () => {
    const providerReference = `PAY-rt-${newIdempotencyKey()}`;
    const values: Record<string, unknown[]> = {};
    const sent = await roundTripsOf(async () => expect((await postDocument(t.app, key, documentBody(source, { providerReference }))).statusCode).toBe(201), values);
    expect(sent).toEqual([['api-key-authenticate'], ['BEGIN', 'document-lock-for-create', 'document-create-claimed', 'COMMIT']]);
    expect(values['document-lock-for-create'][2]).toBe(providerReference);
  });

  it('takes the general way when the document cannot be answered in advance: bank events wait for it, or it is a duplicate', async () => {
    const providerReference = `PAY-rt-${newIdempotencyKey()}`;
    const event = { eventId: `evt-${newIdempotencyKey()}`, eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference };
    expect((await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event))).statusCode).toBe(200);
    const body = documentBody(source, { providerReference });
    const inAdvance = ['BEGIN', 'document-lock-for-create', 'document-create-claimed', 'COMMIT'];
    const waited = await roundTripsOf(async () => expect((await postDocument(t.app, key, body)).json().status).toBe('PAID'));
    expect(waited).toEqual([
      ['api-key-authenticate'],
      inAdvance,
      ['BEGIN', 'idempotency-claim'],
      ['document-lock-provider-reference'],
      ['document-insert'],
      ['bank-event-waiting'],
      ['document-change'],
      ['bank-event-settle'],
      ['idempotency-store'],
      ['COMMIT'],
    ]);
    const duplicate = await roundTripsOf(async () => expect((await postDocument(t.app, key, body)).statusCode).toBe(409));
    expect(duplicate.slice(0, 5)).toEqual([['api-key-authenticate'], inAdvance, ['BEGIN', 'idempotency-claim'], ['document-lock-provider-reference'], ['document-insert']]);
    expect(duplicate.slice(-2)).toEqual([['idempotency-store'], ['COMMIT']]);
  });

  it('replays after the key look-up with a create that claims nothing and finds the stored answer; reads a document with two statements', async () => {
    const idempotencyKey = newIdempotencyKey();
    const body = documentBody(source);
    const created = await postDocument(t.app, key, body, idempotencyKey);
    const replay = await roundTripsOf(async () => expect((await postDocument(t.app, key, body, idempotencyKey)).headers['idempotent-replayed']).toBe('true'));
    expect(replay).toEqual([['api-key-authenticate'], ['document-create-claimed']]);
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

  it('stores and applies a bank event in one transaction of one round trip', async () => {
    const providerReference = `PAY-rt-${newIdempotencyKey()}`;
    await postDocument(t.app, key, documentBody(source, { providerReference }));
    const event = { eventId: `evt-${newIdempotencyKey()}`, eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference };
    const sent = await roundTripsOf(async () => expect((await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event))).statusCode).toBe(200));
    expect(sent).toEqual([['BEGIN', 'document-lock-provider-reference', 'bank-event-receive', 'COMMIT']]);
  });
});

import { Socket } from 'node:net';
import { Client } from 'pg';
import { Batch } from '../../src/database/batch';
import { documentBody, newIdempotencyKey, newSourceWithKey, postDocument, sendWebhook, signedWebhook } from '../support/factories';
import { startTestApp, TestApp, TEST_WEBHOOK_SECRET } from '../support/test-app';

/**
 * Background jobs that may run during a request; they are not the request's work (LISTEN: the outbound
 * delivery worker's own connection, which may (re)subscribe at any time).
 */
const BACKGROUND = new Set(['api-key-usage', 'idempotency-purge', 'admin-auth-failures-purge', 'LISTEN']);
/** The outbound delivery worker's own statements (woken by a commit that enqueued deliveries, on its own schedule). */
const OUTBOUND_WORKER = /outbound_deliver|^outbound-/;

/** The transaction's own statements, by their names (the flags read is named after the flags). */
const LABELS: Record<string, string> = { 'transaction-begin': 'BEGIN', 'transaction-commit': 'COMMIT', 'transaction-commit-flags': 'flags' };

/** How many times each PostgreSQL socket has written: statements issued between two writes leave together. */
const writes = new WeakMap<Socket, number>();
for (const method of ['_write', '_writev'] as const) {
  const original = Socket.prototype[method] as (...args: unknown[]) => unknown;
  Socket.prototype[method] = function (this: Socket, ...args: unknown[]) {
    if (writes.has(this)) writes.set(this, writes.get(this)! + 1);
    return original.apply(this, args);
  } as never;
}

/**
 * Every statement the gateway sends to PostgreSQL goes through pg's Client#query; this records what
 * one request sends (the app runs in this process; the test's own connection is not used meanwhile),
 * grouped by the socket write that carried it: each group is one round trip. Into `values` go the
 * parameters each named statement was sent with. Background work (each job a single statement on the
 * pool, the delivery worker's claim included) is left out.
 */
async function roundTripsOf(work: () => Promise<unknown>, values: Record<string, unknown[]> = {}): Promise<string[][]> {
  const sent: Array<{ label: string; write: string }> = [];
  const original = Client.prototype.query;
  Client.prototype.query = function (this: Client, ...args: unknown[]) {
    const config = args[0] as string | Batch | { name?: string; text: string; values?: unknown[] };
    // A transaction's statements come as batches (one Sync each); its BEGIN, COMMIT and the flags read with it are named.
    const statements =
      config instanceof Batch
        ? config.statements.map(({ statement, values: sentWith }) => ({ name: LABELS[statement.name.split(':')[0]] ?? statement.name, text: statement.text, values: sentWith }))
        : [typeof config === 'string' ? { name: config.trim().split(/\s+/)[0], text: config, values: [] } : { name: config.name ?? config.text.trim().split(/\s+/)[0], text: config.text, values: config.values ?? [] }];
    for (const { name: label, text, values: sentWith } of statements) {
      if (BACKGROUND.has(label) || OUTBOUND_WORKER.test(text) || OUTBOUND_WORKER.test(label)) continue;
      const socket = (this as unknown as { connection: { stream: Socket } }).connection.stream;
      if (!writes.has(socket)) writes.set(socket, 0);
      // A statement leaves with the socket's next write.
      sent.push({ label, write: `${(this as unknown as { processID: number }).processID}:${writes.get(socket)}` });
      values[label] = sentWith;
    }
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof Client.prototype.query;
  try {
    await work();
  } finally {
    Client.prototype.query = original;
  }
  const trips: string[][] = [];
  sent.forEach((statement, i) => (i > 0 && statement.write === sent[i - 1].write ? trips.at(-1)!.push(statement.label) : trips.push([statement.label])));
  return trips;
}

/**
 * The document and its answer, known in advance, are written behind the claim (they write nothing unless
 * the claim is held): the transaction is one batch, which PostgreSQL commits at its Sync, so it needs
 * neither BEGIN nor COMMIT.
 */
const IN_ADVANCE = ['idempotency-claim', 'document-create-answered', 'idempotency-settle-in-advance', 'flags'];
const CREATE = [['api-key-authenticate+stored-answer'], IN_ADVANCE];

describe('round trips per request on the hot paths (documented in the README)', () => {
  let t: TestApp;
  let key: string;
  let source: string;

  beforeAll(async () => {
    t = await startTestApp();
    ({ key, source } = await newSourceWithKey(t.app));
  });
  afterAll(() => t.close());

  it('creates a document in one transaction of one round trip, after one look-up of the key and its stored answer', async () => {
    const values: Record<string, unknown[]> = {};
    const sent = await roundTripsOf(async () => expect((await postDocument(t.app, key, documentBody(source))).statusCode).toBe(201), values);
    expect(sent).toEqual(CREATE);
    expect(values['idempotency-claim'][6]).toBeNull();
  });

  it('takes the providerReference lock with the claim when the document has one', async () => {
    const providerReference = `PAY-rt-${newIdempotencyKey()}`;
    const values: Record<string, unknown[]> = {};
    const sent = await roundTripsOf(async () => expect((await postDocument(t.app, key, documentBody(source, { providerReference }))).statusCode).toBe(201), values);
    expect(sent).toEqual(CREATE);
    // The claim statement also takes the reference's lock (its last parameter), not a statement of its own.
    expect(values['idempotency-claim'][6]).toBe(providerReference);
  });

  it('takes the general way when the document cannot be answered in advance: bank events wait for it, or it is a duplicate', async () => {
    const providerReference = `PAY-rt-${newIdempotencyKey()}`;
    const event = { eventId: `evt-${newIdempotencyKey()}`, eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference };
    expect((await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event))).statusCode).toBe(200);
    const body = documentBody(source, { providerReference });
    const waited = await roundTripsOf(async () => expect((await postDocument(t.app, key, body)).json().status).toBe('PAID'));
    expect(waited).toEqual([
      ['api-key-authenticate+stored-answer'],
      IN_ADVANCE,
      ['BEGIN', 'idempotency-claim'],
      ['document-create'],
      ['webhook-pending'],
      ['document-change'],
      ['webhook-settle'],
      ['idempotency-store', 'flags', 'COMMIT'],
    ]);
    const duplicate = await roundTripsOf(async () => expect((await postDocument(t.app, key, body)).statusCode).toBe(409));
    expect(duplicate.slice(0, 4)).toEqual([['api-key-authenticate+stored-answer'], IN_ADVANCE, ['BEGIN', 'idempotency-claim'], ['document-create']]);
    expect(duplicate.at(-1)).toEqual(['idempotency-store', 'flags', 'COMMIT']);
  });

  it('replays with one statement and reads a document with one', async () => {
    const idempotencyKey = newIdempotencyKey();
    const body = documentBody(source);
    const created = await postDocument(t.app, key, body, idempotencyKey);
    const replay = await roundTripsOf(async () => expect((await postDocument(t.app, key, body, idempotencyKey)).headers['idempotent-replayed']).toBe('true'));
    expect(replay).toEqual([['api-key-authenticate+stored-answer']]);
    const read = await roundTripsOf(async () =>
      expect((await t.app.inject({ method: 'GET', url: `/api/v1/documents/${created.json().id}`, headers: { 'x-api-key': key } })).statusCode).toBe(200),
    );
    expect(read).toEqual([['api-key-authenticate+document']]);
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
    expect(sent).toEqual([['advisory-lock', 'webhook-receive', 'flags']]);
  });
});

import fc from 'fast-check';
import { createHash, randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { PROVIDER_REFERENCE_LOCK_NAMESPACE } from '../../src/documents/documents.repository.js';
import { DocumentStatus, transition } from '../../src/documents/lifecycle.js';
import {
  adminHeaders,
  documentBody,
  feedOnceReady,
  IssuedKey,
  newIdempotencyKey,
  newSourceWithKey,
  postDocument,
  sendWebhook,
  signedWebhook,
} from '../support/factories.js';
import { waitFor } from '../support/processes.js';
import { startTestApp, TestApp, TEST_WEBHOOK_SECRET } from '../support/test-app.js';

const PREVIOUS_SECRET = 'previous-webhook-secret-0123456789';

let counter = 0;
const eventId = () => `evt_${Date.now()}_${++counter}_${randomBytes(3).toString('hex')}`;
const reference = () => `PAY-${Date.now()}-${++counter}`;
const paymentEvent = (providerReference: string, status: string, extra: Record<string, unknown> = {}) => ({
  eventId: eventId(),
  eventType: 'PAYMENT_STATUS',
  status,
  providerReference,
  ...extra,
});

describe('bank webhook POST /api/webhooks/payments/bank', () => {
  let t: TestApp;
  let db: Client;
  let acme: IssuedKey;

  const stored = async (id: string) => (await db.query('SELECT * FROM webhook_events WHERE event_id = $1 ORDER BY id', [id])).rows;
  const deliveries = async () => Number((await db.query('SELECT count(*) FROM webhook_events')).rows[0].count);
  const documentNow = async (id: string) => (await t.app.inject({ method: 'GET', url: `/api/v1/documents/${id}`, headers: { 'x-api-key': acme.key } })).json();
  const newDocument = async (providerReference = reference()) => (await postDocument(t.app, acme.key, documentBody(acme.source, { providerReference }))).json();
  const send = (body: unknown, secret = TEST_WEBHOOK_SECRET) => sendWebhook(t.app, signedWebhook(secret, body));
  /** The feed's events of a document, once there are `count`. */
  const eventsOf = (documentId: string, count: number) =>
    feedOnceReady(
      t.app,
      acme.key,
      (events) => {
        const mine = events.filter((e) => e.documentId === documentId);
        return mine.length >= count && mine;
      },
      `${count} events of the document in the feed`,
    );

  beforeAll(async () => {
    t = await startTestApp({ env: { BANK_WEBHOOK_SECRET_PREVIOUS: PREVIOUS_SECRET } });
    db = t.db;
    acme = await newSourceWithKey(t.app);
  });
  afterAll(() => t.close());

  describe('a correctly signed event', () => {
    it('is stored with its raw body and timestamp, applied, and answered 200 {"received":true}', async () => {
      const doc = await newDocument();
      const event = paymentEvent(doc.providerReference, 'PAID', { amount: '119.00', note: 'extra fields are kept' });
      const delivery = signedWebhook(TEST_WEBHOOK_SECRET, event);
      const res = await sendWebhook(t.app, delivery);
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toBe('{"received":true}');

      const [row] = await stored(event.eventId);
      expect(row).toMatchObject({
        outcome: 'applied',
        document_id: doc.id,
        event_type: 'PAYMENT_STATUS',
        status: 'PAID',
        provider_reference: doc.providerReference,
      });
      expect(row.raw_body.toString('utf8')).toBe(delivery.raw);
      expect(row.signed_at.toISOString()).toBe(delivery.headers['x-provider-timestamp']);

      const after = await documentNow(doc.id);
      expect(after.status).toBe('PAID');
      expect(after.payment).toEqual({ status: 'PAID', lastEventId: event.eventId, updatedAt: expect.any(String) });
      const feed = await eventsOf(doc.id, 2);
      expect(feed.map((e: { type: string; status: string }) => [e.type, e.status])).toEqual([
        ['document.created', 'PENDING_PAYMENT'],
        ['document.status_changed', 'PAID'],
      ]);
    });

    it('accepts an upper-case hex signature, and one made with BANK_WEBHOOK_SECRET_PREVIOUS', async () => {
      const doc = await newDocument();
      const upper = signedWebhook(TEST_WEBHOOK_SECRET, paymentEvent(doc.providerReference, 'PROCESSING'));
      upper.headers['x-provider-signature'] = upper.headers['x-provider-signature'].toUpperCase();
      expect((await sendWebhook(t.app, upper)).statusCode).toBe(200);
      expect((await send(paymentEvent(doc.providerReference, 'FAILED'), PREVIOUS_SECRET)).statusCode).toBe(200);
      expect((await documentNow(doc.id)).status).toBe('PAYMENT_FAILED');
    });

    it('compares statuses case-insensitively and records PENDING/PROCESSING without a status change', async () => {
      const doc = await newDocument();
      await send(paymentEvent(doc.providerReference, 'processing'));
      expect(await documentNow(doc.id)).toMatchObject({ status: 'PENDING_PAYMENT', payment: { status: 'PROCESSING' } });
      await send(paymentEvent(doc.providerReference, 'Paid'));
      expect(await documentNow(doc.id)).toMatchObject({ status: 'PAID', payment: { status: 'PAID' } });
    });
  });

  describe('signature rules (all 401 WEBHOOK_SIGNATURE_INVALID, nothing stored)', () => {
    const expect401 = async (delivery: { raw: string | Buffer; headers: Record<string, string> }) => {
      const before = await deliveries();
      const res = await sendWebhook(t.app, delivery);
      expect(res.statusCode).toBe(401);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ code: 'WEBHOOK_SIGNATURE_INVALID', status: 401 });
      expect(res.body).not.toContain(delivery.headers['x-provider-signature'] ?? 'no signature');
      expect(await deliveries()).toBe(before);
    };

    it('refuses a signature made with another secret', async () => {
      await expect401(signedWebhook('some-other-secret-0123456789', paymentEvent(reference(), 'PAID')));
    });

    it.each(['x-provider-timestamp', 'x-provider-signature'])('refuses a delivery without %s', async (header) => {
      const delivery = signedWebhook(TEST_WEBHOOK_SECRET, paymentEvent(reference(), 'PAID'));
      delete delivery.headers[header];
      await expect401(delivery);
    });

    it.each([
      '2026-11-21T10:15:30Z',
      '2026-11-21T10:15:30.123',
      '2026-11-21T10:15:30.123+00:00',
      '2026-11-21 10:15:30.123Z',
      '1795316000000',
      '2026-02-30T10:15:30.123Z',
    ])('refuses the timestamp %p, correctly signed, as malformed', async (timestamp) => {
      await expect401(signedWebhook(TEST_WEBHOOK_SECRET, paymentEvent(reference(), 'PAID'), timestamp));
    });

    it('refuses timestamps outside ± WEBHOOK_TOLERANCE_SECONDS and accepts them just inside', async () => {
      const at = (offsetSeconds: number) => new Date(Date.now() + offsetSeconds * 1000).toISOString();
      await expect401(signedWebhook(TEST_WEBHOOK_SECRET, paymentEvent(reference(), 'PAID'), at(-301)));
      // Five seconds past the tolerance: still outside when a busy machine takes a while to check it.
      await expect401(signedWebhook(TEST_WEBHOOK_SECRET, paymentEvent(reference(), 'PAID'), at(305)));
      expect((await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, paymentEvent(reference(), 'PAID'), at(-295)))).statusCode).toBe(200);
      expect((await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, paymentEvent(reference(), 'PAID'), at(295)))).statusCode).toBe(200);
    });

    it('verifies before parsing: garbage with a bad signature is a 401, not a 422', async () => {
      const delivery = signedWebhook('wrong-secret-0123456789abcdef', '{this is not json');
      await expect401(delivery);
    });

    it('refuses a signature that is not 64 hex characters', async () => {
      const delivery = signedWebhook(TEST_WEBHOOK_SECRET, paymentEvent(reference(), 'PAID'));
      delivery.headers['x-provider-signature'] = delivery.headers['x-provider-signature'].slice(0, 63) + 'g';
      await expect401(delivery);
      delivery.headers['x-provider-signature'] = delivery.headers['x-provider-signature'].slice(0, 62);
      await expect401(delivery);
    });

    it('turns any mutation of a correctly signed request into a 401, never a 5xx (property)', async () => {
      const base = signedWebhook(TEST_WEBHOOK_SECRET, paymentEvent(reference(), 'PAID', { note: 'Müller & Söhne' }));
      const raw = Buffer.from(base.raw);
      const mutation = fc.oneof(
        fc.record({ kind: fc.constant('body' as const), index: fc.nat(raw.length - 1), xor: fc.integer({ min: 1, max: 255 }) }),
        fc.record({ kind: fc.constant('timestamp' as const), deltaMs: fc.integer({ min: -5000, max: 5000 }).filter((d) => d !== 0) }),
        fc.record({ kind: fc.constant('signature' as const), index: fc.nat(63), char: fc.constantFrom(...'0123456789abcdef') }),
        fc.record({ kind: fc.constant('drop' as const), header: fc.constantFrom('x-provider-timestamp', 'x-provider-signature') }),
      );
      await fc.assert(
        fc.asyncProperty(mutation, async (m) => {
          const headers = { ...base.headers };
          const body = Buffer.from(raw);
          if (m.kind === 'body') body[m.index] ^= m.xor;
          if (m.kind === 'timestamp') headers['x-provider-timestamp'] = new Date(Date.parse(headers['x-provider-timestamp']) + m.deltaMs).toISOString();
          if (m.kind === 'signature') {
            const sig = headers['x-provider-signature'];
            if (sig[m.index].toLowerCase() === m.char) return;
            headers['x-provider-signature'] = sig.slice(0, m.index) + m.char + sig.slice(m.index + 1);
          }
          if (m.kind === 'drop') delete headers[m.header];
          const res = await sendWebhook(t.app, { raw: body, headers });
          expect(res.statusCode).toBe(401);
          expect(res.json().code).toBe('WEBHOOK_SIGNATURE_INVALID');
        }),
        { numRuns: 150 },
      );
      expect(await stored(JSON.parse(base.raw).eventId)).toHaveLength(0);
    });
  });

  describe('body rules (422 VALIDATION_ERROR once the signature matches, nothing stored)', () => {
    it.each<[string, unknown, string]>([
      ['not JSON', '{"eventId": ', 'body'],
      ['an array', '[]', 'body'],
      ['a string', '"PAID"', 'body'],
      ['no eventId', { eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'P' }, 'eventId'],
      ['an empty status', { eventId: 'e1', eventType: 'PAYMENT_STATUS', status: '', providerReference: 'P' }, 'status'],
      ['a numeric providerReference', { eventId: 'e1', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 42 }, 'providerReference'],
      ['a 256-character eventType', { eventId: 'e1', eventType: 'E'.repeat(256), status: 'PAID', providerReference: 'P' }, 'eventType'],
      ['a NUL character in eventId', { eventId: 'e\u00001', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'P' }, 'eventId'],
      // As text, "e\ud800" and "e\ud801" would both be stored as "e\ufffd": one event, the other a duplicate never applied.
      ['an unpaired surrogate in eventId', { eventId: 'e\ud800', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'P' }, 'eventId'],
      // The bank signed one text; read as JSON.parse reads it, the last eventId would win where a log reader sees the first.
      ['eventId given twice', '{"eventId":"e1","eventType":"PAYMENT_STATUS","status":"PAID","providerReference":"P","eventId":"e2"}', 'eventId'],
    ])('refuses %s', async (_name, body, field) => {
      const before = await deliveries();
      const res = await send(body);
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR', errors: [expect.objectContaining({ field })] });
      expect(await deliveries()).toBe(before);
    });
  });

  describe('exactly once, never backwards', () => {
    it('acknowledges a repeated eventId with 200, applies nothing again, and keeps it as a duplicate', async () => {
      const doc = await newDocument();
      const paid = paymentEvent(doc.providerReference, 'PAID');
      expect((await send(paid)).statusCode).toBe(200);
      const refund = paymentEvent(doc.providerReference, 'REFUNDED');
      expect((await send(refund)).statusCode).toBe(200);
      const again = await send(paid);
      expect([again.statusCode, again.body]).toEqual([200, '{"received":true}']);
      expect(await documentNow(doc.id)).toMatchObject({ status: 'REFUNDED', payment: { lastEventId: refund.eventId } });
      expect((await stored(paid.eventId)).map((r: { outcome: string }) => r.outcome)).toEqual(['applied', 'duplicate']);
    });

    it("keeps the first delivery's raw body; a replayed capture stores only its hash and times, and the console shows the event", async () => {
      const doc = await newDocument();
      const capture = signedWebhook(TEST_WEBHOOK_SECRET, paymentEvent(doc.providerReference, 'PAID'));
      const eventId = JSON.parse(capture.raw).eventId as string;
      for (let i = 0; i < 3; i++) expect((await sendWebhook(t.app, capture)).statusCode).toBe(200);
      const rows = await stored(eventId);
      expect(rows.map((r) => r.outcome)).toEqual(['applied', 'duplicate', 'duplicate']);
      const digest = createHash('sha256').update(capture.raw).digest();
      expect(rows[0].raw_body.toString('utf8')).toBe(capture.raw);
      for (const row of rows) expect(row.body_sha256).toEqual(digest);
      for (const duplicate of rows.slice(1)) {
        expect(duplicate).toMatchObject({ raw_body: null, event_type: null, status: null, provider_reference: null });
        expect(duplicate.signed_at).toEqual(rows[0].signed_at);
        expect(duplicate.received_at).toBeInstanceOf(Date);
      }
      const listed = (await t.app.inject({ method: 'GET', url: '/admin/webhook-events?status=duplicate&limit=200', headers: adminHeaders })).json().data;
      expect(listed.find((e: { eventId: string }) => e.eventId === eventId)).toMatchObject({
        eventType: 'PAYMENT_STATUS',
        status: 'PAID',
        providerReference: doc.providerReference,
        outcome: 'duplicate',
      });
    });

    it('applies one of 20 concurrent deliveries of the same event, and records the rest as duplicates', async () => {
      const doc = await newDocument();
      const event = paymentEvent(doc.providerReference, 'PAID');
      const answers = await Promise.all(Array.from({ length: 20 }, () => send(event)));
      expect(answers.every((a) => a.statusCode === 200)).toBe(true);
      const outcomes = (await stored(event.eventId)).map((r: { outcome: string }) => r.outcome).sort();
      expect(outcomes).toEqual(['applied', ...Array(19).fill('duplicate')]);
      const changes = await db.query(`SELECT count(*)::int AS n FROM document_events WHERE document_id = $1 AND type = 'document.status_changed'`, [doc.id]);
      expect(changes.rows[0].n).toBe(1);
    });

    it.each<[string[], string[], string]>([
      [['PAID', 'FAILED'], ['applied', 'ignored'], 'PAID'],
      [['PAID', 'PENDING'], ['applied', 'ignored'], 'PAID'],
      [['REFUNDED'], ['ignored'], 'PENDING_PAYMENT'],
      [['FAILED', 'PAID', 'FAILED'], ['applied', 'applied', 'ignored'], 'PAID'],
      [['PAID', 'REFUNDED', 'PAID'], ['applied', 'applied', 'ignored'], 'REFUNDED'],
      [['PROCESSING', 'PAID', 'PROCESSING'], ['applied', 'applied', 'ignored'], 'PAID'],
      [['CHARGEBACK'], ['ignored'], 'PENDING_PAYMENT'],
    ])('%j is stored as %j and leaves the document %s: late, out-of-order and unknown statuses change nothing', async (statuses, outcomes, expected) => {
      const doc = await newDocument();
      const stored_: string[] = [];
      for (const status of statuses) {
        const event = paymentEvent(doc.providerReference, status);
        expect((await send(event)).statusCode).toBe(200);
        stored_.push((await stored(event.eventId))[0].outcome);
      }
      expect(stored_).toEqual(outcomes);
      expect((await documentNow(doc.id)).status).toBe(expected);
    });

    it('decides every event as the lifecycle function does, whatever arrives in whatever order, cancels included (property)', async () => {
      const step = fc.oneof(
        {
          weight: 5,
          arbitrary: fc
            .constantFrom('PENDING', 'processing', 'PAID', 'Paid', 'FAILED', 'failed', 'REFUNDED', 'CHARGEBACK', 'constructor')
            .map((status) => ({ status })),
        },
        { weight: 1, arbitrary: fc.constant('cancel' as const) },
      );
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
          const doc = await newDocument();
          let model: { status: DocumentStatus; paymentStatus: string | null; lastEventId: string | null; changes: number } = {
            status: 'PENDING_PAYMENT',
            paymentStatus: null,
            lastEventId: null,
            changes: 0,
          };
          for (const s of steps) {
            if (s === 'cancel') {
              const answer = await t.app.inject({
                method: 'POST',
                url: `/api/v1/documents/${doc.id}/cancel`,
                headers: { 'x-api-key': acme.key, 'x-idempotency-key': newIdempotencyKey() },
              });
              const outcome = transition(model.status, { kind: 'cancel' });
              expect(answer.statusCode).toBe(outcome.result === 'changed' ? 200 : 409);
              if (outcome.result === 'changed') model = { ...model, status: outcome.to, changes: model.changes + 1 };
              continue;
            }
            const event = paymentEvent(doc.providerReference, s.status);
            expect((await send(event)).statusCode).toBe(200);
            const outcome = transition(model.status, { kind: 'provider', status: s.status });
            expect((await stored(event.eventId))[0].outcome).toBe(outcome.result === 'refused' ? 'ignored' : 'applied');
            if (outcome.result === 'refused') continue;
            model = { ...model, paymentStatus: s.status.toUpperCase(), lastEventId: event.eventId };
            if (outcome.result === 'changed') model = { ...model, status: outcome.to, changes: model.changes + 1 };
          }
          const now = await documentNow(doc.id);
          expect({ status: now.status, paymentStatus: now.payment.status, lastEventId: now.payment.lastEventId }).toEqual({
            status: model.status,
            paymentStatus: model.paymentStatus,
            lastEventId: model.lastEventId,
          });
          const changes = await db.query(`SELECT count(*)::int AS n FROM document_events WHERE document_id = $1 AND type = 'document.status_changed'`, [
            doc.id,
          ]);
          expect(changes.rows[0].n).toBe(model.changes);
        }),
        { numRuns: 25 },
      );
    });

    it('stores an eventType other than PAYMENT_STATUS as ignored and applies nothing', async () => {
      const doc = await newDocument();
      const event = paymentEvent(doc.providerReference, 'PAID', { eventType: 'PAYOUT_CREATED' });
      expect((await send(event)).statusCode).toBe(200);
      expect((await stored(event.eventId))[0].outcome).toBe('ignored');
      expect((await documentNow(doc.id)).status).toBe('PENDING_PAYMENT');
    });
  });

  describe('events that arrive before their document', () => {
    it('are kept as unmatched and applied, in order, when the document is created', async () => {
      const providerReference = reference();
      const failed = paymentEvent(providerReference, 'FAILED');
      const paid = paymentEvent(providerReference, 'PAID');
      expect((await send(failed)).statusCode).toBe(200);
      expect((await send(paid)).statusCode).toBe(200);
      expect((await stored(paid.eventId))[0]).toMatchObject({ outcome: 'unmatched', document_id: null });

      const created = await postDocument(t.app, acme.key, documentBody(acme.source, { providerReference }));
      expect(created.statusCode).toBe(201);
      const doc = created.json();
      expect(doc).toMatchObject({ status: 'PAID', payment: { status: 'PAID', lastEventId: paid.eventId } });
      for (const e of [failed, paid])
        expect((await stored(e.eventId))[0]).toMatchObject({ outcome: 'applied', document_id: doc.id, processed_at: expect.any(Date) });
      const feed = await eventsOf(doc.id, 3);
      expect(feed.map((e: { status: string }) => e.status)).toEqual(['PENDING_PAYMENT', 'PAYMENT_FAILED', 'PAID']);
    });

    // The lock and the look-up are sent together; PostgreSQL runs them in order, so the look-up's snapshot
    // must be taken once the lock is granted, or a document committed meanwhile would be missed.
    it('are applied to a document committed while the event waited for its providerReference', async () => {
      const providerReference = reference();
      const lock = { namespace: PROVIDER_REFERENCE_LOCK_NAMESPACE, key: providerReference };
      const holder = new Client({ connectionString: t.databaseUrl });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [lock.namespace, lock.key]);
        const document = await holder.query(
          `INSERT INTO documents (source, external_id, type, taxpayer_tax_id, taxpayer_name, taxpayer_country, issue_date, currency, total_amount, tax_amount, provider_reference)
           VALUES ($1, $2, 'INVOICE', 'DE123456789', 'Muster GmbH', 'DE', '2026-11-20', 'EUR', 119, 19, $3) RETURNING id`,
          [acme.source, `ext-${providerReference}`, providerReference],
        );
        const event = paymentEvent(providerReference, 'PAID');
        const delivery = send(event);
        await waitFor(
          async () =>
            (await db.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = hashtext($1)::oid`, [lock.key])).rowCount === 1,
          'the delivery waiting for the lock',
          10_000,
        );
        await holder.query('COMMIT');
        expect((await delivery).statusCode).toBe(200);
        expect((await stored(event.eventId))[0]).toMatchObject({ outcome: 'applied', document_id: document.rows[0].id });
        expect((await documentNow(document.rows[0].id)).status).toBe('PAID');
      } finally {
        await holder.end();
      }
    });

    it('are never left unmatched when the event and the document arrive at the same moment', async () => {
      for (let round = 0; round < 10; round++) {
        const providerReference = reference();
        const event = paymentEvent(providerReference, 'PAID');
        const [delivered, created] = await Promise.all([send(event), postDocument(t.app, acme.key, documentBody(acme.source, { providerReference }))]);
        expect([delivered.statusCode, created.statusCode]).toEqual([200, 201]);
        expect((await stored(event.eventId))[0].outcome).toBe('applied');
        expect((await documentNow(created.json().id)).status).toBe('PAID');
      }
    });
  });

  describe('GET /admin/webhook-events', () => {
    it('lists deliveries newest first, filtered by outcome, behind the admin token', async () => {
      const unmatched = paymentEvent(reference(), 'PAID');
      await send(unmatched);
      const res = await t.app.inject({ method: 'GET', url: '/admin/webhook-events?status=unmatched&limit=5', headers: adminHeaders });
      expect(res.statusCode).toBe(200);
      const { data } = res.json();
      expect(data[0]).toEqual({
        eventId: unmatched.eventId,
        eventType: 'PAYMENT_STATUS',
        status: 'PAID',
        providerReference: unmatched.providerReference,
        outcome: 'unmatched',
        documentId: null,
        receivedAt: expect.any(String),
      });
      expect(data.every((e: { outcome: string }) => e.outcome === 'unmatched')).toBe(true);
      const all = (await t.app.inject({ method: 'GET', url: '/admin/webhook-events?limit=200', headers: adminHeaders })).json().data;
      expect(new Set(all.map((e: { outcome: string }) => e.outcome))).toEqual(new Set(['applied', 'ignored', 'duplicate', 'unmatched']));
      expect((await t.app.inject({ method: 'GET', url: '/admin/webhook-events?status=lost', headers: adminHeaders })).statusCode).toBe(422);
      expect((await t.app.inject({ method: 'GET', url: '/admin/webhook-events' })).statusCode).toBe(401);
    });
  });
});

describe('without BANK_WEBHOOK_SECRET', () => {
  it('rejects every webhook with 401 and says so in the log at start', async () => {
    const t = await startTestApp({ env: { BANK_WEBHOOK_SECRET: '' } });
    try {
      const res = await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, paymentEvent('PAY-1', 'PAID')));
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('WEBHOOK_SIGNATURE_INVALID');
      expect(t.logs()).toContain('BANK_WEBHOOK_SECRET is not set');
    } finally {
      await t.close();
    }
  });
});

import type { AddressInfo } from 'node:net';
import { adminHeaders, documentBody, IssuedKey, newIdempotencyKey, newSourceWithKey, postDocument, sendWebhook, signedWebhook } from '../support/factories.js';
import { startTestApp, TestApp, TEST_WEBHOOK_SECRET } from '../support/test-app.js';

/**
 * A providerReference is unique within a source only: one tenant can no longer take
 * another's bank reference, learn that it is in use, or get its payments; a bank event for a reference
 * several sources claim moves no document until an administrator says which one it was for.
 */
describe('provider references shared by sources', () => {
  let t: TestApp;
  let owner: IssuedKey;
  let squatter: IssuedKey;

  const reference = () => `PAY-${newIdempotencyKey()}`;
  const paid = (providerReference: string) => ({ eventId: `evt-${newIdempotencyKey()}`, eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference });
  const read = async (key: IssuedKey, id: string) =>
    (await t.app.inject({ method: 'GET', url: `/api/v1/documents/${id}`, headers: { 'x-api-key': key.key } })).json();
  const storedOutcome = async (eventId: string) =>
    (await t.db.query(`SELECT outcome, document_id FROM webhook_events WHERE event_id = $1 AND outcome <> 'duplicate'`, [eventId])).rows[0];
  const apply = (eventId: string, documentId: string) =>
    t.app.inject({ method: 'POST', url: `/admin/webhook-events/${eventId}/apply`, headers: adminHeaders, payload: { documentId } });
  const metric = async (outcome: string) =>
    Number(
      new RegExp(`^bank_webhook_events_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(
        (await t.app.inject({ method: 'GET', url: '/metrics' })).body,
      )?.[1] ?? 0,
    );

  beforeAll(async () => {
    t = await startTestApp();
    owner = await newSourceWithKey(t.app);
    squatter = await newSourceWithKey(t.app);
  });
  afterAll(() => t.close());

  it("lets no source learn or block another's reference: both are created, and nothing in either answer tells of the other", async () => {
    const providerReference = reference();
    const squatted = await postDocument(t.app, squatter.key, documentBody(squatter.source, { providerReference }));
    const owned = await postDocument(t.app, owner.key, documentBody(owner.source, { providerReference }));
    expect([squatted.statusCode, owned.statusCode]).toEqual([201, 201]);
    for (const [res, key] of [
      [squatted, squatter],
      [owned, owner],
    ] as const) {
      expect(res.json()).toMatchObject({ source: key.source, providerReference, status: 'PENDING_PAYMENT', payment: { status: null, lastEventId: null } });
      expect(res.body).not.toContain(key === owner ? squatter.source : owner.source);
    }
  });

  it('applies an event for a reference two sources claim to neither, counts and logs it, and lets an administrator apply it to the right one', async () => {
    const providerReference = reference();
    const squatted = (await postDocument(t.app, squatter.key, documentBody(squatter.source, { providerReference }))).json();
    const owned = (await postDocument(t.app, owner.key, documentBody(owner.source, { providerReference }))).json();
    const before = await metric('ambiguous');
    const event = paid(providerReference);
    expect((await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event))).json()).toEqual({ received: true });

    expect(await storedOutcome(event.eventId)).toEqual({ outcome: 'ambiguous', document_id: null });
    expect((await read(owner, owned.id)).status).toBe('PENDING_PAYMENT');
    expect((await read(squatter, squatted.id)).status).toBe('PENDING_PAYMENT');
    expect(await metric('ambiguous')).toBe(before + 1);
    const warning = t
      .logs()
      .split('\n')
      .find((line) => line.includes(event.eventId));
    expect(JSON.parse(warning!)).toMatchObject({ level: 40, eventId: event.eventId });
    const listed = (await t.app.inject({ method: 'GET', url: '/admin/webhook-events?status=ambiguous', headers: adminHeaders })).json().data;
    expect(listed.map((e: { eventId: string }) => e.eventId)).toContain(event.eventId);
    // A retry of the same event changes nothing either.
    expect((await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event))).statusCode).toBe(200);
    expect((await read(owner, owned.id)).status).toBe('PENDING_PAYMENT');

    // Only a document with the event's reference can be chosen.
    const unrelated = (await postDocument(t.app, owner.key, documentBody(owner.source, { providerReference: reference() }))).json();
    const wrong = await apply(event.eventId, unrelated.id);
    expect([wrong.statusCode, wrong.json().errors]).toEqual([422, [{ field: 'documentId', message: "must be a document with the event's providerReference" }]]);
    expect((await apply('evt-never-sent', owned.id)).statusCode).toBe(404);

    const applied = await apply(event.eventId, owned.id);
    expect(applied.statusCode).toBe(200);
    expect(applied.json()).toMatchObject({ eventId: event.eventId, outcome: 'applied', documentId: owned.id, providerReference });
    expect(await read(owner, owned.id)).toMatchObject({ status: 'PAID', payment: { status: 'PAID', lastEventId: event.eventId } });
    expect((await read(squatter, squatted.id)).status).toBe('PENDING_PAYMENT');
    const audit = (await t.app.inject({ method: 'GET', url: '/admin/audit-log?limit=5', headers: adminHeaders })).json().data;
    expect(audit[0]).toMatchObject({ action: 'webhook_event.applied', source: owner.source });
    // Applied once: a second decision is refused and changes nothing.
    expect((await apply(event.eventId, squatted.id)).json()).toMatchObject({ status: 409, code: 'INVALID_STATE_TRANSITION' });
    expect((await read(squatter, squatted.id)).status).toBe('PENDING_PAYMENT');
  });

  it('keeps an applied event applied when a second source claims the reference later, and still creates that source\u2019s document', async () => {
    const providerReference = reference();
    const owned = (await postDocument(t.app, owner.key, documentBody(owner.source, { providerReference }))).json();
    const event = paid(providerReference);
    await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event));
    const late = await postDocument(t.app, squatter.key, documentBody(squatter.source, { providerReference }));
    expect(late.statusCode).toBe(201);
    expect(late.json().status).toBe('PENDING_PAYMENT');
    expect(await storedOutcome(event.eventId)).toEqual({ outcome: 'applied', document_id: owned.id });
    expect((await read(owner, owned.id)).status).toBe('PAID');
  });

  it('still applies a waiting event to the first document that claims its reference, and its later events too (the remaining risk: a squatter before the owner)', async () => {
    const providerReference = reference();
    const event = paid(providerReference);
    await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event));
    expect((await storedOutcome(event.eventId)).outcome).toBe('unmatched');
    const first = await postDocument(t.app, squatter.key, documentBody(squatter.source, { providerReference }));
    expect(first.json().status).toBe('PAID');
    // The owner's own document is created nonetheless, as a later claim: the reference's events keep going to
    // the document that received one, and administrators see the owner's claim.
    const second = await postDocument(t.app, owner.key, documentBody(owner.source, { providerReference }));
    expect([second.statusCode, second.json().status]).toEqual([201, 'PENDING_PAYMENT']);
    const refund = { ...paid(providerReference), status: 'REFUNDED' };
    await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, refund));
    expect(await storedOutcome(refund.eventId)).toEqual({ outcome: 'applied', document_id: first.json().id });
    const view = (await t.app.inject({ method: 'GET', url: `/admin/documents/${second.json().id}`, headers: adminHeaders })).json();
    expect(view).toMatchObject({
      bankEventsGoTo: first.json().id,
      referenceClaims: [{ id: first.json().id, source: squatter.source, receivedBankEvents: true }],
    });
  });

  describe('a reference that already receives bank events, claimed later by another source (through a listening server)', () => {
    let baseUrl: string;
    let listening: TestApp;
    let a: IssuedKey;
    let b: IssuedKey;

    const call = async (method: string, path: string, headers: Record<string, string>, body?: string) => {
      const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
      return { status: res.status, text: await res.text() };
    };
    const create = (key: IssuedKey, providerReference: string) =>
      call(
        'POST',
        '/api/v1/documents',
        { 'x-api-key': key.key, 'content-type': 'application/json', 'x-idempotency-key': newIdempotencyKey() },
        JSON.stringify(documentBody(key.source, { providerReference })),
      );
    const bank = (event: Record<string, string>) => {
      const delivery = signedWebhook(TEST_WEBHOOK_SECRET, event);
      return call('POST', '/api/webhooks/payments/bank', delivery.headers, delivery.raw);
    };
    const own = async (key: IssuedKey, id: string) => JSON.parse((await call('GET', `/api/v1/documents/${id}`, { 'x-api-key': key.key })).text);
    const outcomeOf = async (eventId: string) =>
      (await listening.db.query(`SELECT outcome, document_id FROM webhook_events WHERE event_id = $1 AND outcome <> 'duplicate'`, [eventId])).rows[0];
    const laterClaims = async () => Number(/^provider_reference_later_claims_total (\d+)$/m.exec((await call('GET', '/metrics', {})).text)?.[1] ?? 0);

    beforeAll(async () => {
      listening = await startTestApp();
      await listening.app.listen({ port: 0, host: '127.0.0.1' });
      baseUrl = `http://127.0.0.1:${(listening.app.getHttpServer().address() as AddressInfo).port}`;
      a = await newSourceWithKey(listening.app);
      b = await newSourceWithKey(listening.app);
    });
    afterAll(() => listening.close());

    it("keeps applying the reference's events to the document that received them, and shows administrators the later claim", async () => {
      const providerReference = reference();
      const created = await create(a, providerReference);
      expect(created.status).toBe(201);
      const owned = JSON.parse(created.text);
      const progress = { ...paid(providerReference), status: 'PROCESSING' };
      expect(await bank(progress)).toEqual({ status: 200, text: '{"received":true}' });
      expect(await outcomeOf(progress.eventId)).toEqual({ outcome: 'applied', document_id: owned.id });

      const before = await laterClaims();
      const late = await create(b, providerReference);
      // The later claim is created as any document is, and its answer says nothing of the other source.
      expect(late.status).toBe(201);
      const claimed = JSON.parse(late.text);
      expect(claimed).toMatchObject({ source: b.source, providerReference, status: 'PENDING_PAYMENT', payment: { status: null, lastEventId: null } });
      expect(late.text).not.toContain(a.source);
      expect(late.text).not.toContain(owned.id);

      // The next event goes to the document that has received the reference's events: not held as ambiguous.
      const payment = paid(providerReference);
      expect((await bank(payment)).status).toBe(200);
      expect(await outcomeOf(payment.eventId)).toEqual({ outcome: 'applied', document_id: owned.id });
      expect(await own(a, owned.id)).toMatchObject({ status: 'PAID', payment: { status: 'PAID', lastEventId: payment.eventId } });
      const untouched = await own(b, claimed.id);
      expect(untouched).toMatchObject({ status: 'PENDING_PAYMENT', payment: { status: null, lastEventId: null } });
      expect(JSON.stringify(untouched)).not.toContain(a.source);
      // And so do the events after it.
      const refund = { ...paid(providerReference), status: 'REFUNDED' };
      await bank(refund);
      expect(await outcomeOf(refund.eventId)).toEqual({ outcome: 'applied', document_id: owned.id });

      // Administrators see the later claim: a counter, a warning with ids only, and both documents' views.
      expect(await laterClaims()).toBe(before + 1);
      const warning = listening
        .logs()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((line) => line.documentId === claimed.id && line.establishedDocumentId);
      expect(warning).toMatchObject({ level: 40, documentId: claimed.id, source: b.source, establishedDocumentId: owned.id, establishedSource: a.source });
      expect(JSON.stringify(warning)).not.toContain(providerReference);
      const admin = { authorization: adminHeaders.authorization };
      const ofOwner = JSON.parse((await call('GET', `/admin/documents/${owned.id}`, admin)).text);
      expect(ofOwner).toMatchObject({
        bankEventsGoTo: owned.id,
        referenceClaims: [
          {
            id: claimed.id,
            source: b.source,
            externalId: claimed.externalId,
            status: 'PENDING_PAYMENT',
            createdAt: claimed.createdAt,
            receivedBankEvents: false,
          },
        ],
      });
      const ofLate = JSON.parse((await call('GET', `/admin/documents/${claimed.id}`, admin)).text);
      expect(ofLate).toMatchObject({
        bankEventsGoTo: owned.id,
        referenceClaims: [
          { id: owned.id, source: a.source, externalId: owned.externalId, status: 'REFUNDED', createdAt: owned.createdAt, receivedBankEvents: true },
        ],
      });
      // Exactly these fields of the other document, nothing more.
      expect(Object.keys(ofLate.referenceClaims[0]).sort()).toEqual(['createdAt', 'externalId', 'id', 'receivedBankEvents', 'source', 'status']);
    });

    it('still holds an event as ambiguous while no document with the reference has received one', async () => {
      const providerReference = reference();
      const first = JSON.parse((await create(a, providerReference)).text);
      const second = JSON.parse((await create(b, providerReference)).text);
      const before = await laterClaims();
      const event = paid(providerReference);
      await bank(event);
      expect(await outcomeOf(event.eventId)).toEqual({ outcome: 'ambiguous', document_id: null });
      expect(await laterClaims()).toBe(before);
      const view = JSON.parse((await call('GET', `/admin/documents/${first.id}`, { authorization: adminHeaders.authorization })).text);
      expect(view).toMatchObject({ bankEventsGoTo: null, referenceClaims: [{ id: second.id, receivedBankEvents: false }] });
      // An administrator's decision establishes the document: the reference's next event follows it.
      expect(
        (
          await call(
            'POST',
            `/admin/webhook-events/${event.eventId}/apply`,
            { ...adminHeaders, 'content-type': 'application/json' },
            JSON.stringify({ documentId: second.id }),
          )
        ).status,
      ).toBe(200);
      const refund = { ...paid(providerReference), status: 'REFUNDED' };
      await bank(refund);
      expect(await outcomeOf(refund.eventId)).toEqual({ outcome: 'applied', document_id: second.id });
      expect((await own(b, second.id)).status).toBe('REFUNDED');
      expect((await own(a, first.id)).status).toBe('PENDING_PAYMENT');
    });
  });
});

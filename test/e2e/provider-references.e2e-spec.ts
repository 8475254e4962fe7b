import { adminHeaders, documentBody, IssuedKey, newIdempotencyKey, newSourceWithKey, postDocument, sendWebhook, signedWebhook } from '../support/factories';
import { startTestApp, TestApp, TEST_WEBHOOK_SECRET } from '../support/test-app';

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
  const read = async (key: IssuedKey, id: string) => (await t.app.inject({ method: 'GET', url: `/api/v1/documents/${id}`, headers: { 'x-api-key': key.key } })).json();
  const storedOutcome = async (eventId: string) =>
    (await t.db.query(`SELECT outcome, document_id FROM webhook_events WHERE event_id = $1 AND outcome <> 'duplicate'`, [eventId])).rows[0];
  const apply = (eventId: string, documentId: string) =>
    t.app.inject({ method: 'POST', url: `/admin/webhook-events/${eventId}/apply`, headers: adminHeaders, payload: { documentId } });
  const metric = async (outcome: string) =>
    Number(new RegExp(`^bank_webhook_events_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec((await t.app.inject({ method: 'GET', url: '/metrics' })).body)?.[1] ?? 0);

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
    const warning = t.logs().split('\n').find((line) => line.includes(event.eventId));
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

  it('still applies a waiting event to the first document that claims its reference (the remaining risk: a squatter before the owner)', async () => {
    const providerReference = reference();
    const event = paid(providerReference);
    await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, event));
    expect((await storedOutcome(event.eventId)).outcome).toBe('unmatched');
    const first = await postDocument(t.app, squatter.key, documentBody(squatter.source, { providerReference }));
    expect(first.json().status).toBe('PAID');
    // The owner's own document is created nonetheless, and a later event for the reference is now ambiguous.
    const second = await postDocument(t.app, owner.key, documentBody(owner.source, { providerReference }));
    expect([second.statusCode, second.json().status]).toEqual([201, 'PENDING_PAYMENT']);
    const refund = { ...paid(providerReference), status: 'REFUNDED' };
    await sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, refund));
    expect((await storedOutcome(refund.eventId)).outcome).toBe('ambiguous');
  });
});

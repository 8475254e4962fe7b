import { DataSource } from 'typeorm';
import { BankEventEntity } from '../../src/documents/bank-event.entity.js';
import { DocumentEventEntity } from '../../src/documents/document-event.entity.js';
import { DocumentEntity } from '../../src/documents/document.entity.js';
import { DocumentsRepository } from '../../src/documents/documents.repository.js';
import { PaymentsRepository } from '../../src/documents/payments.repository.js';
import { bankEventTarget } from '../../src/documents/reference-claims.js';
import { mediumModule, Medium, newDocument } from '../support/medium.js';

let n = 0;
const unique = () => `${++n}-${Date.now()}`;

describe('PaymentsRepository', () => {
  let m: Medium;
  let payments: PaymentsRepository;
  let documents: DocumentsRepository;
  let dataSource: DataSource;

  const documentWith = async (providerReference: string, source = 'acme-erp') =>
    (await dataSource.transaction((tx) => documents.insert(tx, newDocument({ source, providerReference }))))!.document.id;
  const delivery = (providerReference: string, status: string, eventId = `evt-${unique()}`, eventType = 'PAYMENT_STATUS') => {
    const rawBody = Buffer.from(JSON.stringify({ eventId, eventType, status, providerReference }));
    return { eventId, eventType, status, providerReference, rawBody, signedAt: new Date() };
  };
  const stored = async (eventId: string) =>
    (await m.check.query(`SELECT outcome, document_id, raw_body IS NOT NULL AS kept FROM webhook_events WHERE event_id = $1 ORDER BY id`, [eventId])).rows;
  const documentStatus = async (id: string) => (await m.check.query(`SELECT status, payment_status FROM documents WHERE id = $1`, [id])).rows[0];

  beforeAll(async () => {
    m = await mediumModule({ entities: [DocumentEntity, DocumentEventEntity, BankEventEntity], providers: [PaymentsRepository, DocumentsRepository] });
    payments = m.moduleRef.get(PaymentsRepository);
    documents = m.moduleRef.get(DocumentsRepository);
    dataSource = m.dataSource;
  });
  afterAll(() => m.close());

  it('applies an event through the lifecycle and appends the status change to the feed', async () => {
    const reference = `PAY-${unique()}`;
    const id = await documentWith(reference);
    const paid = delivery(reference, 'paid');
    expect(await payments.receive(paid, null)).toEqual({ outcome: 'applied', statusChanged: true, documentTraceParent: null });
    expect(await documentStatus(id)).toEqual({ status: 'PAID', payment_status: 'PAID' });
    expect(await stored(paid.eventId)).toEqual([{ outcome: 'applied', document_id: id, kept: true }]);
    expect((await m.check.query(`SELECT type, status, previous_status FROM document_events WHERE document_id = $1 ORDER BY id`, [id])).rows).toEqual([
      { type: 'document.created', status: 'PENDING_PAYMENT', previous_status: null },
      { type: 'document.status_changed', status: 'PAID', previous_status: 'PENDING_PAYMENT' },
    ]);
    // Recorded, not moved: PROCESSING after PAID is not allowed; nor is an unknown status, nor a cancel from the bank.
    for (const status of ['PROCESSING', 'WHATEVER', 'cancel']) expect(await payments.receive(delivery(reference, status), null)).toEqual({ outcome: 'ignored', statusChanged: false, documentTraceParent: null });
    expect(await documentStatus(id)).toEqual({ status: 'PAID', payment_status: 'PAID' });
    // Only recorded: the payment status changes, the document's does not, and the feed gets nothing.
    const pending = `PAY-${unique()}-pending`;
    const pendingId = await documentWith(pending);
    expect(await payments.receive(delivery(pending, 'processing'), null)).toEqual({ outcome: 'applied', statusChanged: false, documentTraceParent: null });
    expect(await documentStatus(pendingId)).toEqual({ status: 'PENDING_PAYMENT', payment_status: 'PROCESSING' });
  });

  it('stores a repeated eventId as a duplicate with only its hash, and applies nothing again', async () => {
    const reference = `PAY-${unique()}`;
    const id = await documentWith(reference);
    const failed = delivery(reference, 'FAILED');
    await payments.receive(failed, null);
    expect(await payments.receive({ ...failed, status: 'PAID' }, null)).toEqual({ outcome: null, statusChanged: false, documentTraceParent: null });
    expect(await stored(failed.eventId)).toEqual([
      { outcome: 'applied', document_id: id, kept: true },
      { outcome: 'duplicate', document_id: id, kept: false },
    ]);
    expect(await documentStatus(id)).toEqual({ status: 'PAYMENT_FAILED', payment_status: 'FAILED' });
    // The administrators' list shows the duplicate with the fields of the event as first received.
    const [duplicate] = await payments.page({ outcome: 'duplicate', providerReference: reference }, 10);
    expect(duplicate).toMatchObject({ eventId: failed.eventId, eventType: 'PAYMENT_STATUS', status: 'FAILED', providerReference: reference, documentId: id });
  });

  it('keeps an event for no document as unmatched, one for documents of several sources as ambiguous, and another event type as ignored', async () => {
    const reference = `PAY-${unique()}`;
    const early = delivery(reference, 'PAID');
    expect(await payments.receive(early, null)).toEqual({ outcome: 'unmatched', statusChanged: false, documentTraceParent: null });
    const id = await documentWith(reference);
    const waiting = await dataSource.transaction((tx) => payments.waiting(tx, reference));
    expect(waiting).toEqual([{ id: expect.any(String), eventId: early.eventId, status: 'PAID' }]);
    await dataSource.transaction((tx) => payments.settle(tx, waiting[0].id, 'applied', id));
    expect(await stored(early.eventId)).toEqual([{ outcome: 'applied', document_id: id, kept: true }]);
    expect((await m.check.query(`SELECT processed_at IS NOT NULL AS processed FROM webhook_events WHERE event_id = $1`, [early.eventId])).rows).toEqual([{ processed: true }]);

    expect(await payments.receive(delivery(reference, 'PAID', undefined, 'PAYOUT_CREATED'), null)).toEqual({ outcome: 'ignored', statusChanged: false, documentTraceParent: null });
    expect((await payments.page({ outcome: 'unmatched' }, 10)).map((e) => e.providerReference)).not.toContain(reference);

    await documentWith(reference, 'another-source');
    const ambiguous = delivery(reference, 'REFUNDED');
    expect(await payments.receive(ambiguous, null)).toEqual({ outcome: 'ambiguous', statusChanged: false, documentTraceParent: null });
    const locked = await dataSource.transaction((tx) => payments.findForUpdate(tx, ambiguous.eventId));
    expect(locked).toMatchObject({ eventId: ambiguous.eventId, outcome: 'ambiguous', providerReference: reference, status: 'REFUNDED' });
  });

  it("sends an event to the reference's established document, whoever else claims it, as bankEventTarget decides", async () => {
    // Every set of one to three claiming documents, each established (a bank event applied to it) or not.
    for (let claimers = 1; claimers <= 3; claimers += 1) {
      for (let mask = 0; mask < 1 << claimers; mask += 1) {
        const reference = `PAY-${unique()}`;
        const claims = [];
        for (let i = 0; i < claimers; i += 1) {
          const id = await documentWith(reference, `source-${i}`);
          const established = (mask & (1 << i)) !== 0;
          if (established) await m.check.query(`UPDATE documents SET payment_status = 'PENDING', payment_last_event_id = $2 WHERE id = $1`, [id, `evt-${unique()}`]);
          claims.push({ id, established });
        }
        const event = delivery(reference, 'PROCESSING');
        const expected = bankEventTarget(claims);
        const { outcome } = await payments.receive(event, null);
        expect({ claims, outcome, stored: await stored(event.eventId) }).toEqual({
          claims,
          outcome: expected ? 'applied' : 'ambiguous',
          stored: [{ outcome: expected ? 'applied' : 'ambiguous', document_id: expected, kept: true }],
        });
        if (expected) expect(await documentStatus(expected)).toEqual({ status: 'PENDING_PAYMENT', payment_status: 'PROCESSING' });
      }
    }
  });

  it('keeps the established document after its own source cancels it: the events are ignored there, not moved to a later claim', async () => {
    const reference = `PAY-${unique()}`;
    const first = await documentWith(reference, 'owner');
    expect((await payments.receive(delivery(reference, 'PENDING'), null)).outcome).toBe('applied');
    await m.check.query(`UPDATE documents SET status = 'CANCELLED' WHERE id = $1`, [first]);
    const later = await documentWith(reference, 'later');
    const paid = delivery(reference, 'PAID');
    expect(await payments.receive(paid, null)).toEqual({ outcome: 'ignored', statusChanged: false, documentTraceParent: null });
    expect(await stored(paid.eventId)).toEqual([{ outcome: 'ignored', document_id: first, kept: true }]);
    expect(await documentStatus(later)).toEqual({ status: 'PENDING_PAYMENT', payment_status: null });
  });

  it('counts the outcomes per time bucket, and pages newest first', async () => {
    const reference = `PAY-${unique()}`;
    await payments.receive(delivery(reference, 'PAID'), null);
    const buckets = await payments.outcomesPerBucket(1, 5);
    expect(buckets.length).toBeGreaterThan(0);
    expect(buckets.at(-1)).toEqual({ at: expect.any(Date), outcome: expect.any(String), count: expect.any(Number) });
    const page = await payments.page({}, 3);
    expect(page.map((e) => Number(e.id))).toEqual([...page.map((e) => Number(e.id))].sort((a, b) => b - a));
    expect((await payments.page({ before: page[0].id }, 1))[0].id).toBe(page[1].id);
  });
});

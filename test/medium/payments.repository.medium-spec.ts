import { createHash } from 'node:crypto';
import { Transactions } from '../../src/database/transaction.js';
import { BankEventEntity } from '../../src/documents/bank-event.entity.js';
import { changed } from '../../src/documents/document-changes.js';
import { DocumentEventEntity } from '../../src/documents/document-event.entity.js';
import { DocumentEventsRepository } from '../../src/documents/document-events.repository.js';
import { DocumentEntity } from '../../src/documents/document.entity.js';
import { DocumentsRepository } from '../../src/documents/documents.repository.js';
import { NewBankEvent, PaymentsRepository, ReceivedDelivery } from '../../src/documents/payments.repository.js';
import { bankEventTarget } from '../../src/documents/reference-claims.js';
import { mediumModule, Medium, newDocumentWithEvent } from '../support/medium.js';
import { waitFor } from '../support/processes.js';

let n = 0;
const unique = () => `${++n}-${Date.now()}`;

describe('PaymentsRepository', () => {
  let m: Medium;
  let payments: PaymentsRepository;
  let documents: DocumentsRepository;
  let events: DocumentEventsRepository;
  let transactions: Transactions;

  const documentWith = async (providerReference: string, source = 'acme-erp') => {
    const made = newDocumentWithEvent({ source, providerReference });
    await transactions.run(async (tx) => {
      documents.insert(tx, made.document);
      events.append(tx, [made.event]);
    });
    return made.document.id;
  };
  const delivery = (providerReference: string, status: string, eventId = `evt-${unique()}`, eventType = 'PAYMENT_STATUS'): ReceivedDelivery => {
    const rawBody = Buffer.from(JSON.stringify({ eventId, eventType, status, providerReference }));
    return { eventId, eventType, status, providerReference, rawBody, signedAt: new Date() };
  };
  /** The row PaymentsService writes for `received`: the event itself, or (a duplicate) its eventId, hash and times only. */
  const rowOf = (received: ReceivedDelivery, outcome: NewBankEvent['outcome'], documentId: string | null = null): NewBankEvent => {
    const bodySha256 = createHash('sha256').update(received.rawBody).digest();
    const times = { signedAt: received.signedAt, receivedAt: new Date(), processedAt: null };
    if (outcome === 'duplicate')
      return { eventId: received.eventId, eventType: null, status: null, providerReference: null, outcome, documentId, rawBody: null, bodySha256, ...times };
    const { eventId, eventType, status, providerReference, rawBody } = received;
    return { eventId, eventType, status, providerReference, outcome, documentId, rawBody, bodySha256, ...times };
  };
  const record = (event: NewBankEvent) => transactions.run(async (tx) => payments.record(tx, event));
  const findings = (received: ReceivedDelivery) => transactions.run((tx) => payments.findingsForReceive(tx, received));
  const stored = async (eventId: string) =>
    (
      await m.check.query(
        `SELECT outcome, document_id, raw_body IS NOT NULL AS kept, processed_at IS NOT NULL AS processed FROM webhook_events WHERE event_id = $1 ORDER BY id`,
        [eventId],
      )
    ).rows;
  /** Sessions of this test's database waiting for a lock (an advisory lock, or a row's). */
  const waitingForLocks = async () =>
    (await m.check.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).rowCount ?? 0;

  beforeAll(async () => {
    // A read below waits for a lock for as long as the test takes to look: no lock timeout may end it first.
    m = await mediumModule({
      entities: [DocumentEntity, DocumentEventEntity, BankEventEntity],
      providers: [PaymentsRepository, DocumentsRepository, DocumentEventsRepository],
      config: { DB_LOCK_TIMEOUT_MS: '120000' },
    });
    payments = m.moduleRef.get(PaymentsRepository);
    documents = m.moduleRef.get(DocumentsRepository);
    events = m.moduleRef.get(DocumentEventsRepository);
    transactions = m.transactions;
  });
  afterAll(() => m.close());

  it('finds whether the eventId was stored before, and for a PAYMENT_STATUS event the documents of every source that claim the reference, with what deciding needs as a read gives it', async () => {
    const reference = `PAY-${unique()}`;
    const first = await documentWith(reference, 'first-source');
    const second = await documentWith(reference, 'second-source');
    await documentWith(`${reference}-other`);
    const paid = delivery(reference, 'PAID');
    const found = await findings(paid);
    expect(found.seen).toBe(false);
    expect(found.claims.map((claim) => claim.id).sort()).toEqual([first, second].sort());
    for (const claim of found.claims) {
      const { id, source, status, paymentStatus, paymentLastEventId, paymentUpdatedAt, updatedAt, traceParent } = (await documents.find(claim.id))!;
      expect(claim).toEqual({ id, source, status, paymentStatus, paymentLastEventId, paymentUpdatedAt, updatedAt, traceParent });
    }
    // Another event type goes to no document: none is read, nor locked (it does not wait for a row another transaction holds).
    const holder = transactions.begin();
    await documents.findLocked(holder, first);
    try {
      expect(await findings(delivery(reference, 'PAID', undefined, 'PAYOUT_CREATED'))).toEqual({ seen: false, claims: [] });
    } finally {
      await holder.rollback();
    }
    expect(await findings(delivery(`PAY-${unique()}-none`, 'PAID'))).toEqual({ seen: false, claims: [] });

    // Stored, the eventId is seen: whatever its outcome, but for a duplicate's row.
    await record(rowOf(paid, 'ambiguous'));
    expect((await findings({ ...paid, status: 'FAILED' })).seen).toBe(true);
    const onlyDuplicate = delivery(reference, 'PAID');
    await record(rowOf(onlyDuplicate, 'duplicate'));
    expect((await findings(onlyDuplicate)).seen).toBe(false);
  });

  it('reads each claim\u2019s payment mark, so bankEventTarget can tell the established document among them', async () => {
    // Every set of one to three claiming documents, each established (a bank event applied to it) or not.
    for (let claimers = 1; claimers <= 3; claimers += 1) {
      for (let mask = 0; mask < 1 << claimers; mask += 1) {
        const reference = `PAY-${unique()}`;
        const claims = [];
        for (let i = 0; i < claimers; i += 1) {
          const id = await documentWith(reference, `source-${i}`);
          const established = (mask & (1 << i)) !== 0;
          if (established)
            await m.check.query(`UPDATE documents SET payment_status = 'PENDING', payment_last_event_id = $2 WHERE id = $1`, [id, `evt-${unique()}`]);
          claims.push({ id, established });
        }
        const found = await findings(delivery(reference, 'PROCESSING'));
        const read = found.claims.map((claim) => ({ id: claim.id, established: claim.paymentLastEventId !== null }));
        expect({ mask, read: [...read].sort((a, b) => a.id.localeCompare(b.id)) }).toEqual({
          mask,
          read: [...claims].sort((a, b) => a.id.localeCompare(b.id)),
        });
        expect(bankEventTarget(read)).toBe(bankEventTarget(claims));
      }
    }
  });

  it('waits behind the providerReference lock for a create, then sees the document it committed', async () => {
    const reference = `PAY-${unique()}-locked`;
    const made = newDocumentWithEvent({ providerReference: reference });
    const creator = transactions.begin();
    expect(await documents.findingsForCreate(creator, made.document, { taken: false })).toMatchObject({ waiting: [] });
    documents.insert(creator, made.document);
    events.append(creator, [made.event]);

    const receiving = findings(delivery(reference, 'PAID'));
    await waitFor(async () => (await waitingForLocks()) === 1, 'the bank event to wait for the reference\u2019s lock');
    await creator.commit();
    expect((await receiving).claims.map((claim) => claim.id)).toEqual([made.document.id]);
  });

  it('locks the claiming documents until its transaction ends: a change of one waits, then reads what it committed', async () => {
    const reference = `PAY-${unique()}-rows`;
    const id = await documentWith(reference);
    const receiver = transactions.begin();
    const paid = delivery(reference, 'PAID');
    const [claim] = (await payments.findingsForReceive(receiver, paid)).claims;
    const applied = changed(claim, { status: 'PAID', payment: { status: 'PAID', eventId: paid.eventId }, traceParent: null }, new Date());
    documents.change(receiver, applied.document);
    events.append(receiver, [applied.event!]);
    payments.record(receiver, rowOf(paid, 'applied', id));

    // A cancel of the same document (by id, not by reference) waits for the row.
    const cancelling = transactions.run((tx) => documents.findLocked(tx, id));
    await waitFor(async () => (await waitingForLocks()) === 1, 'the cancel to wait for the document\u2019s row');
    await receiver.commit();
    expect(await cancelling).toMatchObject({ status: 'PAID', paymentStatus: 'PAID', paymentLastEventId: paid.eventId });
    expect(await stored(paid.eventId)).toEqual([{ outcome: 'applied', document_id: id, kept: true, processed: false }]);
  });

  it('records an event, and a repeat of it as a duplicate with only its hash; a second event row for one eventId is refused', async () => {
    const reference = `PAY-${unique()}`;
    const id = await documentWith(reference);
    const failed = delivery(reference, 'FAILED');
    await record(rowOf(failed, 'applied', id));
    await record(rowOf({ ...failed, status: 'PAID' }, 'duplicate', id));
    expect(await stored(failed.eventId)).toEqual([
      { outcome: 'applied', document_id: id, kept: true, processed: false },
      { outcome: 'duplicate', document_id: id, kept: false, processed: false },
    ]);
    const { rows } = await m.check.query(`SELECT event_type, status, provider_reference, body_sha256 FROM webhook_events WHERE event_id = $1 ORDER BY id`, [
      failed.eventId,
    ]);
    expect(rows).toEqual([
      { event_type: 'PAYMENT_STATUS', status: 'FAILED', provider_reference: reference, body_sha256: createHash('sha256').update(failed.rawBody).digest() },
      { event_type: null, status: null, provider_reference: null, body_sha256: createHash('sha256').update(failed.rawBody).digest() },
    ]);
    // The administrators' list shows the duplicate with the fields of the event as first received.
    const [duplicate] = await payments.page({ outcome: 'duplicate', providerReference: reference }, 10);
    expect(duplicate).toMatchObject({ eventId: failed.eventId, eventType: 'PAYMENT_STATUS', status: 'FAILED', providerReference: reference, documentId: id });
    // Two deliveries of one event that both read before either committed: the second is refused (PaymentsService then runs it again, and it is a duplicate).
    await expect(record(rowOf(failed, 'ignored', id))).rejects.toMatchObject({ code: '23505' });
    expect(await stored(failed.eventId)).toHaveLength(2);
  });

  it('settles the events that waited for a document with what applying them did, and finds an event locked by its eventId', async () => {
    const reference = `PAY-${unique()}`;
    const [early, later] = [delivery(reference, 'PAID'), delivery(reference, 'PROCESSING')];
    await record(rowOf(early, 'unmatched'));
    await record(rowOf(later, 'unmatched'));
    const id = await documentWith(reference);
    const waiting = await transactions.run(
      async (tx) =>
        (await documents.findingsForCreate(tx, { source: 'another-source', externalId: `INV-${unique()}`, providerReference: reference }, { taken: false }))
          .waiting,
    );
    expect(waiting.map((event) => event.eventId)).toEqual([early.eventId, later.eventId]);
    const at = new Date();
    await transactions.run(async (tx) => {
      payments.settle(tx, [], id, at);
      payments.settle(
        tx,
        [
          { id: waiting[0].id, outcome: 'applied' },
          { id: waiting[1].id, outcome: 'ignored' },
        ],
        id,
        at,
      );
    });
    expect(await stored(early.eventId)).toEqual([{ outcome: 'applied', document_id: id, kept: true, processed: true }]);
    expect(await stored(later.eventId)).toEqual([{ outcome: 'ignored', document_id: id, kept: true, processed: true }]);
    expect((await m.check.query(`SELECT processed_at FROM webhook_events WHERE event_id = $1`, [early.eventId])).rows[0].processed_at).toEqual(at);

    // findLocked: the event's own row, not its duplicate's, held until the transaction ends.
    const ambiguous = delivery(reference, 'REFUNDED');
    await record(rowOf(ambiguous, 'ambiguous'));
    await record(rowOf(ambiguous, 'duplicate'));
    const holder = transactions.begin();
    const locked = (await payments.findLocked(holder, ambiguous.eventId))!;
    expect(locked).toMatchObject({
      eventId: ambiguous.eventId,
      outcome: 'ambiguous',
      providerReference: reference,
      status: 'REFUNDED',
      rawBody: ambiguous.rawBody,
    });
    const second = transactions.run((tx) => payments.findLocked(tx, ambiguous.eventId));
    await waitFor(async () => (await waitingForLocks()) === 1, 'the second findLocked to wait for the event\u2019s row');
    payments.settle(holder, [{ id: locked.id, outcome: 'applied' }], id, at);
    await holder.commit();
    expect(await second).toMatchObject({ eventId: ambiguous.eventId, outcome: 'applied', documentId: id });
    expect(await transactions.run((tx) => payments.findLocked(tx, `evt-${unique()}-never`))).toBeNull();
  });

  it('counts the outcomes per time bucket, and pages newest first', async () => {
    const reference = `PAY-${unique()}`;
    await record(rowOf(delivery(reference, 'PAID'), 'unmatched'));
    const buckets = await payments.outcomesPerBucket(1, 5);
    expect(buckets.length).toBeGreaterThan(0);
    expect(buckets.at(-1)).toEqual({ at: expect.any(Date), outcome: expect.any(String), count: expect.any(Number) });
    const page = await payments.page({}, 3);
    expect(page.map((e) => Number(e.id))).toEqual([...page.map((e) => Number(e.id))].sort((a, b) => b - a));
    expect((await payments.page({ before: page[0].id }, 1))[0].id).toBe(page[1].id);
    expect((await payments.page({ outcome: 'unmatched', providerReference: reference }, 10)).map((e) => e.providerReference)).toEqual([reference]);
  });
});

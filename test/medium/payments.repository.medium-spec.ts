import { Client } from 'pg';
import { DocumentsRepository, draftDocument } from '../../src/documents/documents.repository';
import { CreateDocumentDto } from '../../src/documents/dto/create-document.dto';
import { PaymentsRepository } from '../../src/documents/payments.repository';
import { mediumDatabase, MediumDatabase } from '../support/medium';

let n = 0;
const unique = () => `${++n}-${Date.now()}`;

describe('PaymentsRepository', () => {
  let m: MediumDatabase;
  let payments: PaymentsRepository;
  let documents: DocumentsRepository;
  let check: Client;

  const documentWith = async (providerReference: string) => {
    const draft = draftDocument({
      source: 'acme-erp',
      externalId: `INV-${unique()}`,
      type: 'INVOICE',
      taxpayer: { taxId: 'DE1', name: 'Muster GmbH', country: 'DE' },
      issueDate: '2026-11-20',
      currency: 'EUR',
      totalAmount: '119.00',
      taxAmount: '19.00',
      providerReference,
    } as CreateDocumentDto);
    await m.db.transaction((tx) => documents.insert(tx, draft));
    return draft.id;
  };
  const delivery = (providerReference: string, status: string, eventId = `evt-${unique()}`, eventType = 'PAYMENT_STATUS') => {
    const rawBody = Buffer.from(JSON.stringify({ eventId, eventType, status, providerReference }));
    return { eventId, eventType, status, providerReference, rawBody, signedAt: new Date() };
  };
  const stored = async (eventId: string) => (await check.query(`SELECT outcome, document_id, raw_body IS NOT NULL AS kept FROM webhook_events WHERE event_id = $1 ORDER BY id`, [eventId])).rows;
  const documentStatus = async (id: string) => (await check.query(`SELECT status, payment_status FROM documents WHERE id = $1`, [id])).rows[0];

  beforeAll(async () => {
    m = await mediumDatabase();
    payments = new PaymentsRepository(m.db);
    documents = new DocumentsRepository(m.db);
    check = new Client({ connectionString: m.url });
    await check.connect();
  });
  afterAll(async () => {
    await check.end();
    await m.close();
  });

  it('applies an event through the lifecycle and appends the status change to the feed', async () => {
    const reference = `PAY-${unique()}`;
    const id = await documentWith(reference);
    const paid = delivery(reference, 'paid');
    expect(await payments.receive(paid)).toEqual({ outcome: 'applied', statusChanged: true });
    expect(await documentStatus(id)).toEqual({ status: 'PAID', payment_status: 'PAID' });
    expect(await stored(paid.eventId)).toEqual([{ outcome: 'applied', document_id: id, kept: true }]);
    // Recorded, not moved: PROCESSING after PAID is not allowed; nor is an unknown status.
    expect(await payments.receive(delivery(reference, 'PROCESSING'))).toEqual({ outcome: 'ignored', statusChanged: false });
    expect(await payments.receive(delivery(reference, 'WHATEVER'))).toEqual({ outcome: 'ignored', statusChanged: false });
    expect(await documentStatus(id)).toEqual({ status: 'PAID', payment_status: 'PAID' });
  });

  it('stores a repeated eventId as a duplicate with only its hash, and applies nothing again', async () => {
    const reference = `PAY-${unique()}`;
    const id = await documentWith(reference);
    const failed = delivery(reference, 'FAILED');
    await payments.receive(failed);
    expect(await payments.receive({ ...failed, status: 'PAID' })).toEqual({ outcome: null, statusChanged: false });
    expect(await stored(failed.eventId)).toEqual([
      { outcome: 'applied', document_id: id, kept: true },
      { outcome: 'duplicate', document_id: id, kept: false },
    ]);
    expect(await documentStatus(id)).toEqual({ status: 'PAYMENT_FAILED', payment_status: 'FAILED' });
  });

  it('keeps an event for no document as unmatched, and another event type as ignored', async () => {
    const reference = `PAY-${unique()}`;
    const early = delivery(reference, 'PAID');
    expect(await payments.receive(early)).toEqual({ outcome: 'unmatched', statusChanged: false });
    const id = await documentWith(reference);
    const waiting = await m.db.transaction((tx) => payments.waiting(tx, reference));
    expect(waiting).toEqual([{ id: expect.any(String), eventId: early.eventId, status: 'PAID' }]);
    await m.db.transaction((tx) => payments.settle(tx, waiting[0].id, 'applied', id));
    expect(await stored(early.eventId)).toEqual([{ outcome: 'applied', document_id: id, kept: true }]);

    expect(await payments.receive(delivery(reference, 'PAID', undefined, 'PAYOUT_CREATED'))).toEqual({ outcome: 'ignored', statusChanged: false });
    expect((await payments.page({ outcome: 'unmatched' }, 10)).map((e) => e.providerReference)).not.toContain(reference);
  });
});

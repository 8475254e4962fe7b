import { DataSource } from 'typeorm';
import { Transactions } from '../../src/database/transaction.js';
import { BankEventEntity } from '../../src/documents/bank-event.entity.js';
import { changed, DocumentRecord, NewDocumentEvent } from '../../src/documents/document-changes.js';
import { DocumentEventEntity } from '../../src/documents/document-event.entity.js';
import { DocumentEventsRepository } from '../../src/documents/document-events.repository.js';
import { DocumentEntity } from '../../src/documents/document.entity.js';
import { CreateFindings, DocumentsRepository } from '../../src/documents/documents.repository.js';
import { PaymentsRepository } from '../../src/documents/payments.repository.js';
import { mediumModule, Medium, newDocumentWithEvent } from '../support/medium.js';
import { waitFor } from '../support/processes.js';

let n = 0;
const unique = () => `${++n}-${Date.now()}`;

describe('DocumentsRepository', () => {
  let m: Medium;
  let documents: DocumentsRepository;
  let events: DocumentEventsRepository;
  let payments: PaymentsRepository;
  let transactions: Transactions;
  let dataSource: DataSource;
  const count = async (table: string, where = 'true', values: unknown[] = []) =>
    (await m.check.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, values)).rows[0].n;
  /** Sessions of this test's database waiting for a lock (an advisory lock, or a row's). */
  const waitingForLocks = async () =>
    (await m.check.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).rowCount ?? 0;

  /** What a create reads, then its document and event written, as DocumentsService.create does when nothing refuses it. */
  const create = (made: { document: DocumentRecord; event: NewDocumentEvent }): Promise<CreateFindings> =>
    transactions.run(async (tx) => {
      const findings = await documents.findingsForCreate(tx, made.document, { taken: false });
      documents.insert(tx, made.document);
      events.append(tx, [made.event]);
      return findings;
    });
  const findings = (document: Pick<DocumentRecord, 'source' | 'externalId' | 'providerReference'>, taken = true) =>
    transactions.run((tx) => documents.findingsForCreate(tx, document, { taken }));
  const unmatched = (providerReference: string, eventId = `evt-${unique()}`, outcome = 'unmatched') =>
    m.check.query<{ id: string }>(
      `INSERT INTO webhook_events (event_id, event_type, status, provider_reference, outcome, raw_body, body_sha256, signed_at)
       VALUES ($1, 'PAYMENT_STATUS', 'PAID', $2, $3, '\\x7b7d', '\\x00', now()) RETURNING id::text`,
      [eventId, providerReference, outcome],
    );

  beforeAll(async () => {
    // A create below waits for a lock for as long as the test takes to look: no lock timeout may end it first.
    m = await mediumModule({
      entities: [DocumentEntity, DocumentEventEntity, BankEventEntity],
      providers: [DocumentsRepository, DocumentEventsRepository, PaymentsRepository],
      config: { DB_LOCK_TIMEOUT_MS: '120000' },
    });
    documents = m.moduleRef.get(DocumentsRepository);
    events = m.moduleRef.get(DocumentEventsRepository);
    payments = m.moduleRef.get(PaymentsRepository);
    transactions = m.transactions;
    dataSource = m.dataSource;
  });
  afterAll(() => m.close());

  it('inserts the document the application made, with its created event, each value as a read then gives it back', async () => {
    const made = newDocumentWithEvent({ providerReference: `PAY-${unique()}` });
    expect(await create(made)).toEqual({ taken: null, heldBy: null, waiting: [] });
    const stored = await documents.find(made.document.id);
    // The create's answer is made from the record: it must be what a read returns.
    expect(stored).toEqual({ ...made.document, seq: expect.any(String) });
    expect(stored).toMatchObject({ issueDate: '2026-11-20', totalAmount: '119.00', paymentUpdatedAt: null, createdAt: made.document.createdAt });
    expect(Object.keys(stored!.metadata)).toEqual(['a', 'zz']);
    expect(
      (await events.ofDocument(made.document.id)).map(({ type, status, previousStatus, createdAt }) => ({ type, status, previousStatus, createdAt })),
    ).toEqual([{ type: 'document.created', status: 'PENDING_PAYMENT', previousStatus: null, createdAt: made.document.createdAt }]);
    // The same row as TypeORM's own entity API reads it.
    expect(await dataSource.getRepository(DocumentEntity).findOneBy({ id: made.document.id })).toEqual(stored);
    expect(await documents.find('9b2f0c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f')).toBeNull();
  });

  it('tells a create asking which of the source\u2019s externalId and providerReference are taken; another source may use both', async () => {
    const first = newDocumentWithEvent({ providerReference: `PAY-${unique()}` });
    await create(first);
    const { source, externalId, providerReference } = first.document;
    expect(await findings({ source, externalId, providerReference: `PAY-${unique()}` })).toMatchObject({ taken: { externalId: true, reference: false } });
    expect(await findings({ source, externalId: `INV-${unique()}`, providerReference })).toMatchObject({ taken: { externalId: false, reference: true } });
    expect(await findings({ source, externalId: `INV-${unique()}`, providerReference: null })).toMatchObject({
      taken: { externalId: false, reference: false },
    });
    expect(await findings({ source: 'other-source', externalId, providerReference })).toMatchObject({ taken: { externalId: false, reference: false } });
  });

  it('writes nothing of a create whose document another committed meanwhile: the constraint refuses it, with its event', async () => {
    const first = newDocumentWithEvent({ providerReference: `PAY-${unique()}` });
    await create(first);
    const duplicates = [
      newDocumentWithEvent({ externalId: first.document.externalId }),
      newDocumentWithEvent({ providerReference: first.document.providerReference }),
    ];
    for (const duplicate of duplicates) {
      // As two creates that both read before either committed: the second's insert meets the first's row.
      const failure = await transactions
        .run(async (tx) => {
          documents.insert(tx, duplicate.document);
          events.append(tx, [duplicate.event]);
        })
        .catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: '23505' });
      expect(await documents.find(duplicate.document.id)).toBeNull();
      expect(await count('document_events', 'document_id = $1', [duplicate.document.id])).toBe(0);
    }
    expect(await count('documents', 'source = $1', [first.document.source])).toBeGreaterThan(0);
    expect(
      await count('documents', 'source = $1 AND (external_id = $2 OR provider_reference = $3)', [
        first.document.source,
        first.document.externalId,
        first.document.providerReference,
      ]),
    ).toBe(1);
  });

  it('finds the bank events that wait for the providerReference, oldest first, and only those', async () => {
    const reference = `PAY-${unique()}-waited`;
    const [older, newer] = [`evt-${unique()}`, `evt-${unique()}`];
    const [{ id: olderId }] = (await unmatched(reference, older)).rows;
    const [{ id: newerId }] = (await unmatched(reference, newer)).rows;
    await unmatched(reference, `evt-${unique()}`, 'ambiguous');
    await unmatched(`${reference}-other`);
    expect((await findings(newDocumentWithEvent({ providerReference: reference }).document)).waiting).toEqual([
      { id: olderId, eventId: older, status: 'PAID' },
      { id: newerId, eventId: newer, status: 'PAID' },
    ]);
    // Without a providerReference nothing waits.
    expect((await findings(newDocumentWithEvent({ providerReference: null }).document)).waiting).toEqual([]);
  });

  it('waits behind the providerReference lock for a bank event being stored, then sees what it committed', async () => {
    const reference = `PAY-${unique()}-locked`;
    const early = {
      eventId: `evt-${unique()}`,
      eventType: 'PAYMENT_STATUS',
      status: 'PAID',
      providerReference: reference,
      rawBody: Buffer.from('{}'),
      signedAt: new Date(),
    };
    // The bank event's transaction reads behind the reference's lock: no document yet, so it is stored as unmatched.
    const holder = transactions.begin();
    expect(await payments.findingsForReceive(holder, early)).toEqual({ seen: false, claims: [] });
    const at = new Date();
    payments.record(holder, { ...early, outcome: 'unmatched', documentId: null, bodySha256: Buffer.alloc(32), receivedAt: at, processedAt: null });

    const made = newDocumentWithEvent({ providerReference: reference });
    const creating = create(made);
    await waitFor(async () => (await waitingForLocks()) === 1, 'the create to wait for the reference\u2019s lock');
    expect(await documents.find(made.document.id)).toBeNull();
    await holder.commit();
    const seen = await creating;
    expect(seen.waiting).toEqual([{ id: expect.any(String), eventId: early.eventId, status: 'PAID' }]);
    expect(await documents.find(made.document.id)).not.toBeNull();
  });

  it('names the document of another source the reference is established for (a bank event applied to it), and none before', async () => {
    const reference = `PAY-${unique()}-held`;
    const first = newDocumentWithEvent({ source: 'first-source', providerReference: reference });
    expect((await create(first)).heldBy).toBeNull();
    // Claimed by a second source while no bank event has been applied: not established, so nobody holds it.
    expect((await create(newDocumentWithEvent({ source: 'second-source', providerReference: reference }))).heldBy).toBeNull();
    await transactions.run(async (tx) => {
      const locked = (await documents.findLocked(tx, first.document.id))!;
      documents.change(tx, changed(locked, { status: 'PAID', payment: { status: 'PAID', eventId: 'evt-held' }, traceParent: null }, new Date()).document);
    });
    expect(await findings(newDocumentWithEvent({ source: 'third-source', providerReference: reference }).document)).toEqual({
      taken: { externalId: false, reference: false },
      heldBy: { id: first.document.id, source: 'first-source' },
      waiting: [],
    });
    // A document without a reference is held by nobody.
    expect((await findings(newDocumentWithEvent({ providerReference: null }).document)).heldBy).toBeNull();
  });

  it('writes a change with its feed event, only the payment when the status stays, and locks what it reads until the commit', async () => {
    const made = newDocumentWithEvent();
    await create(made);
    const id = made.document.id;
    const recorded = await transactions.run(async (tx) => {
      const locked = (await documents.findLocked(tx, id))!;
      expect(locked).toEqual(await documents.find(id));
      const change = changed(locked, { status: 'PENDING_PAYMENT', payment: { status: 'PROCESSING', eventId: 'evt-1' }, traceParent: null }, new Date());
      expect(change.event).toBeNull();
      documents.change(tx, change.document);
      return change.document;
    });
    expect(await documents.find(id)).toEqual({ ...recorded, seq: expect.any(String) });
    expect(recorded).toMatchObject({ status: 'PENDING_PAYMENT', paymentStatus: 'PROCESSING', paymentLastEventId: 'evt-1', paymentUpdatedAt: expect.any(Date) });

    // While one transaction holds the row, another's findLocked waits, then reads what the first committed.
    const holder = transactions.begin();
    const held = (await documents.findLocked(holder, id))!;
    const paid = changed(held, { status: 'PAID', payment: { status: 'PAID', eventId: 'evt-2' }, traceParent: null }, new Date());
    documents.change(holder, paid.document);
    events.append(holder, [paid.event!]);
    const waiting = transactions.run((tx) => documents.findLocked(tx, id));
    await waitFor(async () => (await waitingForLocks()) === 1, 'the second findLocked to wait for the row');
    await holder.commit();
    expect(await waiting).toEqual({ ...paid.document, seq: expect.any(String) });

    const { rows } = await m.check.query(`SELECT type, status, previous_status FROM document_events WHERE document_id = $1 ORDER BY id`, [id]);
    expect(rows).toEqual([
      { type: 'document.created', status: 'PENDING_PAYMENT', previous_status: null },
      { type: 'document.status_changed', status: 'PAID', previous_status: 'PENDING_PAYMENT' },
    ]);
    expect(await transactions.run((tx) => documents.findLocked(tx, '9b2f0c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f'))).toBeNull();
  });

  it('pages a source\u2019s documents newest first, by status, type and externalId, and administrators by providerReference', async () => {
    const source = `pager-${unique()}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const made = newDocumentWithEvent({ source, type: i % 2 ? 'RECEIPT' : 'INVOICE', providerReference: i === 1 ? `REF-${source}` : `REF-${source}-${i}` });
      await create(made);
      ids.push(made.document.id);
    }
    const all = await documents.page(source, {}, 10);
    expect(all.map((d) => d.id)).toEqual([...ids].reverse());
    expect((await documents.page(source, { type: 'RECEIPT' }, 10)).map((d) => d.id)).toEqual([ids[3], ids[1]]);
    expect((await documents.page(source, { before: all[2].seq }, 2)).map((d) => d.id)).toEqual([ids[1], ids[0]]);
    expect((await documents.page(source, { externalId: all[2].externalId }, 10)).map((d) => d.id)).toEqual([all[2].id]);
    expect(await documents.page(source, { externalId: all[2].externalId, status: 'PAID' }, 10)).toEqual([]);
    expect((await documents.pageByProviderReference(`REF-${source}`, undefined, {}, 10)).map((d) => d.id)).toEqual([ids[1]]);
    expect((await documents.pageByProviderReference(`REF-${source}`, source, {}, 10)).map((d) => d.id)).toEqual([ids[1]]);
    expect(await documents.pageByProviderReference(`REF-${source}`, 'another-source', {}, 10)).toEqual([]);
  });
});

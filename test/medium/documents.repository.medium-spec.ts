import { DataSource } from 'typeorm';
import { BankEventEntity } from '../../src/documents/bank-event.entity.js';
import { DocumentEventEntity } from '../../src/documents/document-event.entity.js';
import { DocumentEntity } from '../../src/documents/document.entity.js';
import { DocumentsRepository } from '../../src/documents/documents.repository.js';
import { mediumModule, Medium, newDocument } from '../support/medium.js';
import { waitFor } from '../support/processes.js';

describe('DocumentsRepository', () => {
  let m: Medium;
  let documents: DocumentsRepository;
  let dataSource: DataSource;
  const count = async (table: string, where = 'true', values: unknown[] = []) => (await m.check.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, values)).rows[0].n;

  beforeAll(async () => {
    // A create below waits for a lock for as long as the test takes to look: no lock timeout may end it first.
    m = await mediumModule({ entities: [DocumentEntity, DocumentEventEntity, BankEventEntity], providers: [DocumentsRepository], config: { DB_LOCK_TIMEOUT_MS: '120000' } });
    documents = m.moduleRef.get(DocumentsRepository);
    dataSource = m.dataSource;
  });
  afterAll(() => m.close());

  it('inserts a document with its created event and answers the row as stored, each value as a read gives it back', async () => {
    const written = newDocument({ providerReference: `PAY-${Date.now()}` });
    const created = await dataSource.transaction((tx) => documents.insert(tx, written));
    expect(created).toEqual({ document: expect.objectContaining({ status: 'PENDING_PAYMENT', seq: expect.any(String), totalAmount: '119.00' }), paymentsWaiting: false, heldBy: null });
    const stored = await documents.find(created!.document.id);
    expect(stored).toEqual(created!.document);
    expect(stored).toMatchObject({ issueDate: '2026-11-20', paymentUpdatedAt: null, createdAt: expect.any(Date) });
    expect(Object.keys(stored!.metadata)).toEqual(['a', 'zz']);
    expect(await count('document_events', `document_id = $1 AND type = 'document.created'`, [stored!.id])).toBe(1);
    // The same row as TypeORM's own entity API reads it.
    expect(await dataSource.getRepository(DocumentEntity).findOneBy({ id: stored!.id })).toEqual(stored);
  });

  it('writes nothing for a duplicate externalId or providerReference of the source, and tells which; another source may use both', async () => {
    const first = newDocument({ providerReference: `PAY-${Date.now()}` });
    await dataSource.transaction((tx) => documents.insert(tx, first));
    for (const duplicate of [newDocument({ externalId: first.externalId }), newDocument({ providerReference: first.providerReference })]) {
      expect(await dataSource.transaction((tx) => documents.insert(tx, duplicate))).toBeNull();
    }
    expect(await count('documents', 'source = $1 AND (external_id = $2 OR provider_reference = $3)', [first.source, first.externalId, first.providerReference])).toBe(1);
    expect(await dataSource.transaction((tx) => documents.externalIdTaken(tx, first.source, first.externalId))).toBe(true);
    expect(await dataSource.transaction((tx) => documents.externalIdTaken(tx, 'other-source', first.externalId))).toBe(false);
    expect(await dataSource.transaction((tx) => documents.insert(tx, { ...first, source: 'other-source' }))).not.toBeNull();
  });

  it('says when bank events wait for the providerReference, and takes the reference\u2019s lock before it looks', async () => {
    const waitedFor = `PAY-${Date.now()}-waited`;
    await m.check.query(
      `INSERT INTO webhook_events (event_id, event_type, status, provider_reference, outcome, raw_body, body_sha256, signed_at)
       VALUES ($1, 'PAYMENT_STATUS', 'PAID', $2, 'unmatched', '\\x7b7d', '\\x00', now())`,
      [`evt-${Date.now()}`, waitedFor],
    );
    expect(await dataSource.transaction((tx) => documents.insert(tx, newDocument({ providerReference: waitedFor })))).toMatchObject({ paymentsWaiting: true });

    // While another transaction holds the reference's lock, the create waits, and then sees what it committed.
    const reference = `PAY-${Date.now()}-locked`;
    const holder = dataSource.createQueryRunner();
    await holder.startTransaction();
    await documents.lockProviderReference(holder.manager, reference);
    const create = dataSource.transaction((tx) => documents.insert(tx, newDocument({ providerReference: reference })));
    await waitFor(
      async () => (await holder.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)).length === 1,
      'the create to wait for the lock',
    );
    await holder.query(
      `INSERT INTO webhook_events (event_id, event_type, status, provider_reference, outcome, raw_body, body_sha256, signed_at)
       VALUES ($1, 'PAYMENT_STATUS', 'PAID', $2, 'unmatched', '\\x7b7d', '\\x00', now())`,
      [`evt-${Date.now()}-held`, reference],
    );
    await holder.commitTransaction();
    await holder.release();
    expect(await create).toMatchObject({ paymentsWaiting: true });
  });

  it("names the document of another source the reference is established for (a bank event applied to it), and none before", async () => {
    const reference = `PAY-${Date.now()}-held`;
    const first = (await dataSource.transaction((tx) => documents.insert(tx, newDocument({ source: 'first-source', providerReference: reference }))))!;
    expect(first.heldBy).toBeNull();
    // Claimed by a second source while no bank event has been applied: not established, so nobody holds it.
    expect((await dataSource.transaction((tx) => documents.insert(tx, newDocument({ source: 'second-source', providerReference: reference }))))!.heldBy).toBeNull();
    await dataSource.transaction((tx) => documents.change(tx, { id: first.document.id, status: 'PAID', previous: 'PENDING_PAYMENT', paymentStatus: 'PAID', eventId: 'evt-held', traceParent: null }));
    const later = (await dataSource.transaction((tx) => documents.insert(tx, newDocument({ source: 'third-source', providerReference: reference }))))!;
    expect(later.heldBy).toEqual({ id: first.document.id, source: 'first-source' });
    expect(later.document).not.toHaveProperty('heldById');
    // A document without a reference is held by nobody.
    expect((await dataSource.transaction((tx) => documents.insert(tx, newDocument({ providerReference: null }))))!.heldBy).toBeNull();
  });

  it('changes a status with its feed event, only records a payment status that changes none, and locks what it reads for update', async () => {
    const { document } = (await dataSource.transaction((tx) => documents.insert(tx, newDocument())))!;
    const recorded = await dataSource.transaction(async (tx) => {
      const locked = await documents.findForUpdate(tx, document.id);
      return documents.change(tx, { id: locked!.id, status: 'PENDING_PAYMENT', previous: 'PENDING_PAYMENT', paymentStatus: 'PROCESSING', eventId: 'evt-1', traceParent: null });
    });
    expect(recorded).toMatchObject({ status: 'PENDING_PAYMENT', paymentStatus: 'PROCESSING', paymentLastEventId: 'evt-1', paymentUpdatedAt: expect.any(Date) });
    const paid = await dataSource.transaction((tx) => documents.change(tx, { id: document.id, status: 'PAID', previous: 'PENDING_PAYMENT', paymentStatus: 'PAID', eventId: 'evt-2', traceParent: null }));
    expect(paid).toEqual(await documents.find(document.id));
    const { rows } = await m.check.query(`SELECT type, status, previous_status FROM document_events WHERE document_id = $1 ORDER BY id`, [document.id]);
    expect(rows).toEqual([
      { type: 'document.created', status: 'PENDING_PAYMENT', previous_status: null },
      { type: 'document.status_changed', status: 'PAID', previous_status: 'PENDING_PAYMENT' },
    ]);
    await expect(documents.findForUpdate(dataSource.manager, document.id)).rejects.toThrow(/transaction/i);
  });

  it('pages a source\u2019s documents newest first, by status, type and externalId, and administrators by providerReference', async () => {
    const source = `pager-${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const created = await dataSource.transaction((tx) => documents.insert(tx, newDocument({ source, type: i % 2 ? 'RECEIPT' : 'INVOICE', providerReference: `REF-${source}` + (i % 2 ? '' : `-${i}`) })));
      ids.push(created?.document.id ?? 'duplicate');
    }
    // The second and the fourth share a providerReference within the source: the fourth is a duplicate.
    expect(ids[3]).toBe('duplicate');
    const kept = ids.filter((id) => id !== 'duplicate');
    const all = await documents.page(source, {}, 10);
    expect(all.map((d) => d.id)).toEqual([...kept].reverse());
    expect((await documents.page(source, { type: 'RECEIPT' }, 10)).map((d) => d.id)).toEqual([ids[1]]);
    expect((await documents.page(source, { before: all[1].seq }, 2)).map((d) => d.id)).toEqual([kept[1], kept[0]]);
    expect((await documents.page(source, { externalId: all[2].externalId }, 10)).map((d) => d.id)).toEqual([all[2].id]);
    expect(await documents.page(source, { externalId: all[2].externalId, status: 'PAID' }, 10)).toEqual([]);
    expect((await documents.pageByProviderReference(`REF-${source}`, undefined, {}, 10)).map((d) => d.id)).toEqual([ids[1]]);
    expect(await documents.pageByProviderReference(`REF-${source}`, 'another-source', {}, 10)).toEqual([]);
  });
});

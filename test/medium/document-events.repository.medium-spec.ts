import { DataSource } from 'typeorm';
import { DocumentEventEntity } from '../../src/documents/document-event.entity.js';
import { DocumentEventsRepository } from '../../src/documents/document-events.repository.js';
import { DocumentEntity } from '../../src/documents/document.entity.js';
import { DocumentsRepository } from '../../src/documents/documents.repository.js';
import { BankEventEntity } from '../../src/documents/bank-event.entity.js';
import { mediumModule, Medium, newDocument } from '../support/medium.js';

describe('DocumentEventsRepository (the feed)', () => {
  let m: Medium;
  let events: DocumentEventsRepository;
  let documents: DocumentsRepository;
  let dataSource: DataSource;

  beforeAll(async () => {
    m = await mediumModule({ entities: [DocumentEntity, DocumentEventEntity, BankEventEntity], providers: [DocumentEventsRepository, DocumentsRepository] });
    events = m.moduleRef.get(DocumentEventsRepository);
    documents = m.moduleRef.get(DocumentsRepository);
    dataSource = m.dataSource;
    // The tests write events of transactions 998 to 1001 as long finished: on a cluster this young (this file
    // run alone) its transaction ids must first pass them.
    while (BigInt((await m.check.query('SELECT pg_current_xact_id()::text AS xid')).rows[0].xid) < 1200n);
  });
  afterAll(() => m.close());

  it('orders by transaction id as a number, so a page never skips an event whose id has fewer digits', async () => {
    const source = 'feed-order';
    const { document } = (await dataSource.transaction((tx) => documents.insert(tx, newDocument({ source }))))!;
    // Events written by transactions 998 to 1001, long finished: as text, "1000" and "1001" sort first.
    await m.check.query(`DELETE FROM document_events WHERE source = $1`, [source]);
    for (const xid of ['1001', '998', '1000', '999']) {
      await m.check.query(`INSERT INTO document_events (source, document_id, type, status, xid) VALUES ($1, $2, 'document.created', 'PENDING_PAYMENT', $3::xid8)`, [
        source,
        document.id,
        xid,
      ]);
    }
    const first = await events.page(source, { xid: '0', id: '0' }, 2);
    expect(first.map((e) => e.xid)).toEqual(['998', '999']);
    expect(first[0]).toMatchObject({ source, documentId: document.id, type: 'document.created', status: 'PENDING_PAYMENT', previousStatus: null, createdAt: expect.any(Date) });
    const last = first[first.length - 1];
    const second = await events.page(source, { xid: last.xid, id: last.id }, 2);
    expect(second.map((e) => e.xid)).toEqual(['1000', '1001']);
  });

  it('shows an event only once every older transaction has ended, and a document\u2019s events in order', async () => {
    const source = `feed-horizon-${Date.now()}`;
    const { document } = (await dataSource.transaction((tx) => documents.insert(tx, newDocument({ source }))))!;
    const open = dataSource.createQueryRunner();
    await open.startTransaction();
    await open.query('SELECT pg_current_xact_id()');
    try {
      await dataSource.transaction((tx) => documents.change(tx, { id: document.id, status: 'CANCELLED', previous: 'PENDING_PAYMENT', paymentStatus: null, eventId: null, traceParent: null }));
      // The cancel committed, but a transaction older than it is still running: not shown yet.
      expect((await events.page(source, { xid: '0', id: '0' }, 10)).map((e) => e.type)).toEqual(['document.created']);
    } finally {
      await open.rollbackTransaction();
      await open.release();
    }
    expect((await events.page(source, { xid: '0', id: '0' }, 10)).map((e) => e.type)).toEqual(['document.created', 'document.status_changed']);
    const ofDocument = await events.ofDocument(document.id);
    expect(ofDocument.map((e) => [e.type, e.status, e.previousStatus])).toEqual([
      ['document.created', 'PENDING_PAYMENT', null],
      ['document.status_changed', 'CANCELLED', 'PENDING_PAYMENT'],
    ]);
    expect(await events.documentsOf(ofDocument.map((e) => e.id))).toEqual(ofDocument.map((e) => ({ id: e.id, documentId: document.id })));
  });

  it('tells the newest event\u2019s transaction and the cluster\u2019s next one, and how fast they went by', async () => {
    const { newest, next } = await events.transactions();
    expect(BigInt(next)).toBeGreaterThan(BigInt(newest!));
    expect(await events.pace(10)).toEqual({ newestXid: expect.any(String), newestAt: expect.any(Date), earlierXid: expect.any(String), earlierAt: expect.any(Date) });
  });
});

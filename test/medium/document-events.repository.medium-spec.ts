import { DataSource } from 'typeorm';
import { Transactions } from '../../src/database/transaction.js';
import { changed, NewDocumentEvent } from '../../src/documents/document-changes.js';
import { DocumentEventEntity } from '../../src/documents/document-event.entity.js';
import { DocumentEventsRepository } from '../../src/documents/document-events.repository.js';
import { DocumentEntity } from '../../src/documents/document.entity.js';
import { DocumentsRepository } from '../../src/documents/documents.repository.js';
import { BankEventEntity } from '../../src/documents/bank-event.entity.js';
import { mediumModule, Medium, newDocumentWithEvent } from '../support/medium.js';

describe('DocumentEventsRepository (the feed)', () => {
  let m: Medium;
  let events: DocumentEventsRepository;
  let documents: DocumentsRepository;
  let dataSource: DataSource;
  let transactions: Transactions;
  /** A new document of `source` with its created event, committed. */
  const documentOf = async (source: string) => {
    const made = newDocumentWithEvent({ source });
    await transactions.run(async (tx) => {
      documents.insert(tx, made.document);
      events.append(tx, [made.event]);
    });
    return made;
  };

  beforeAll(async () => {
    m = await mediumModule({ entities: [DocumentEntity, DocumentEventEntity, BankEventEntity], providers: [DocumentEventsRepository, DocumentsRepository] });
    events = m.moduleRef.get(DocumentEventsRepository);
    documents = m.moduleRef.get(DocumentsRepository);
    dataSource = m.dataSource;
    transactions = m.transactions;
    // The tests write events of transactions 998 to 1001 as long finished: on a cluster this young (this file
    // run alone) its transaction ids must first pass them.
    while (BigInt((await m.check.query('SELECT pg_current_xact_id()::text AS xid')).rows[0].xid) < 1200n);
  });
  afterAll(() => m.close());

  it('orders by transaction id as a number, so a page never skips an event whose id has fewer digits', async () => {
    const source = 'feed-order';
    const { document } = await documentOf(source);
    // Events written by transactions 998 to 1001, long finished: as text, "1000" and "1001" sort first.
    await m.check.query(`DELETE FROM document_events WHERE source = $1`, [source]);
    for (const xid of ['1001', '998', '1000', '999']) {
      await m.check.query(
        `INSERT INTO document_events (source, document_id, type, status, xid) VALUES ($1, $2, 'document.created', 'PENDING_PAYMENT', $3::xid8)`,
        [source, document.id, xid],
      );
    }
    const first = await events.page(source, { xid: '0', id: '0' }, 2);
    expect(first.map((e) => e.xid)).toEqual(['998', '999']);
    expect(first[0]).toMatchObject({
      source,
      documentId: document.id,
      type: 'document.created',
      status: 'PENDING_PAYMENT',
      previousStatus: null,
      createdAt: expect.any(Date),
    });
    const last = first[first.length - 1];
    const second = await events.page(source, { xid: last.xid, id: last.id }, 2);
    expect(second.map((e) => e.xid)).toEqual(['1000', '1001']);
  });

  it('shows an event only once every older transaction has ended, and a document\u2019s events in order', async () => {
    const source = `feed-horizon-${Date.now()}`;
    const { document } = await documentOf(source);
    const open = dataSource.createQueryRunner();
    await open.startTransaction();
    await open.query('SELECT pg_current_xact_id()');
    try {
      await transactions.run(async (tx) => {
        const cancelled = changed((await documents.findLocked(tx, document.id))!, { status: 'CANCELLED', traceParent: null }, new Date());
        documents.change(tx, cancelled.document);
        events.append(tx, [cancelled.event!]);
      });
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

  it('appends events with the changes they announce: in the order given, all of one transaction, none when given none', async () => {
    const source = `feed-append-${Date.now()}`;
    const { document, event } = await documentOf(source);
    const at = new Date();
    const later: NewDocumentEvent[] = [
      {
        ...event,
        type: 'document.status_changed',
        status: 'PAID',
        previousStatus: 'PENDING_PAYMENT',
        createdAt: at,
        traceParent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      },
      { ...event, type: 'document.status_changed', status: 'REFUNDED', previousStatus: 'PAID', createdAt: at, traceParent: null },
    ];
    await transactions.run(async (tx) => {
      events.append(tx, []);
      events.append(tx, later);
    });
    const stored = await events.ofDocument(document.id);
    expect(
      stored.map(({ type, status, previousStatus, createdAt, traceParent, source: of }) => ({
        type,
        status,
        previousStatus,
        createdAt,
        traceParent,
        source: of,
      })),
    ).toEqual(
      [event, ...later].map(({ type, status, previousStatus, createdAt, traceParent }) => ({ type, status, previousStatus, createdAt, traceParent, source })),
    );
    // The two appended together are of one transaction, after the document's.
    const { rows } = await m.check.query<{ xid: string }>(`SELECT xid::text FROM document_events WHERE document_id = $1 ORDER BY id`, [document.id]);
    expect(new Set(rows.slice(1).map((row) => row.xid)).size).toBe(1);
    expect(BigInt(rows[1].xid)).toBeGreaterThan(BigInt(rows[0].xid));
    // Given none, nothing is written.
    await transactions.run(async (tx) => events.append(tx, []));
    expect(await events.ofDocument(document.id)).toHaveLength(3);
  });

  it('tells the newest event\u2019s transaction and the cluster\u2019s next one, and how fast they went by', async () => {
    const { newest, next } = await events.transactions();
    expect(BigInt(next)).toBeGreaterThan(BigInt(newest!));
    expect(await events.pace(10)).toEqual({
      newestXid: expect.any(String),
      newestAt: expect.any(Date),
      earlierXid: expect.any(String),
      earlierAt: expect.any(Date),
    });
  });
});

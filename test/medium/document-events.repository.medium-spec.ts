import { Client } from 'pg';
import { DocumentEventsRepository } from '../../src/documents/document-events.repository';
import { DocumentsRepository, draftDocument } from '../../src/documents/documents.repository';
import { CreateDocumentDto } from '../../src/documents/dto/create-document.dto';
import { mediumDatabase, MediumDatabase } from '../support/medium';

describe('DocumentEventsRepository (the feed)', () => {
  let m: MediumDatabase;
  let events: DocumentEventsRepository;
  let check: Client;

  beforeAll(async () => {
    m = await mediumDatabase();
    events = new DocumentEventsRepository(m.db);
    check = new Client({ connectionString: m.url });
    await check.connect();
  });
  afterAll(async () => {
    await check.end();
    await m.close();
  });

  it('orders by transaction id as a number, so a page never skips an event whose id has fewer digits', async () => {
    const source = 'feed-order';
    const draft = draftDocument({
      source,
      externalId: 'INV-xid',
      type: 'INVOICE',
      taxpayer: { taxId: 'DE1', name: 'Muster GmbH', country: 'DE' },
      issueDate: '2026-11-20',
      currency: 'EUR',
      totalAmount: '119.00',
      taxAmount: '19.00',
    } as CreateDocumentDto);
    await m.db.transaction((tx) => new DocumentsRepository(m.db).insert(tx, draft));
    // Events written by transactions 998 to 1001, long finished: as text, "1000" and "1001" sort first.
    await check.query(`DELETE FROM document_events WHERE source = $1`, [source]);
    for (const xid of ['1001', '998', '1000', '999']) {
      await check.query(`INSERT INTO document_events (source, document_id, type, status, xid) VALUES ($1, $2, 'document.created', 'PENDING_PAYMENT', $3::xid8)`, [
        source,
        draft.id,
        xid,
      ]);
    }
    const first = await events.page(source, { xid: '0', id: '0' }, 2);
    expect(first.map((e) => e.xid)).toEqual(['998', '999']);
    const last = first[first.length - 1];
    const second = await events.page(source, { xid: last.xid, id: last.id }, 2);
    expect(second.map((e) => e.xid)).toEqual(['1000', '1001']);
  });
});

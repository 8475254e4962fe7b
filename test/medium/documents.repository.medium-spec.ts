import { Client } from 'pg';
import { DocumentsRepository, draftDocument } from '../../src/documents/documents.repository';
import { CreateDocumentDto } from '../../src/documents/dto/create-document.dto';
import { ClaimArguments } from '../../src/idempotency/idempotency.repository';
import { mediumDatabase, MediumDatabase } from '../support/medium';

let n = 0;
const unique = () => `${++n}-${Date.now()}`;
const dto = (overrides: Partial<CreateDocumentDto> = {}): CreateDocumentDto =>
  ({
    source: 'acme-erp',
    externalId: `INV-${unique()}`,
    type: 'INVOICE',
    taxpayer: { taxId: 'DE1', name: 'Muster GmbH', country: 'DE' },
    issueDate: '2026-11-20',
    currency: 'EUR',
    totalAmount: '0119.00',
    taxAmount: '19.00',
    metadata: { zz: 'last', a: 'first' },
    ...overrides,
  }) as CreateDocumentDto;
const claim = (key = `key-${unique()}`): ClaimArguments => ['acme-erp', key, 'f'.repeat(64), 86400, 201, '{"answer":true}', '/x', null];

describe('DocumentsRepository', () => {
  let m: MediumDatabase;
  let documents: DocumentsRepository;
  let check: Client;
  const count = async (table: string, where = 'true', values: unknown[] = []) => (await check.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, values)).rows[0].n;

  beforeAll(async () => {
    m = await mediumDatabase();
    documents = new DocumentsRepository(m.db);
    check = new Client({ connectionString: m.url });
    await check.connect();
  });
  afterAll(async () => {
    await check.end();
    await m.close();
  });

  describe('createClaimed', () => {
    it('writes the key\u2019s record, the document as drafted and its created event in one statement', async () => {
      const draft = draftDocument(dto({ providerReference: `PAY-${unique()}` }));
      expect(await documents.createClaimed(draft, claim())).toEqual({ created: true, answer: '{"answer":true}' });
      const stored = await documents.find(m.db, draft.id);
      // Each value as the draft said PostgreSQL would hand it back.
      expect(stored).toMatchObject({ ...draft, paymentUpdatedAt: null });
      expect(Object.keys(stored!.metadata)).toEqual(['a', 'zz']);
      expect(await count('document_events', `document_id = $1 AND type = 'document.created'`, [draft.id])).toBe(1);
    });

    it('writes nothing for a key that is taken (and says what it holds), a duplicate, or a providerReference bank events wait for', async () => {
      const key = `key-${unique()}`;
      await documents.createClaimed(draftDocument(dto()), claim(key));
      const again = draftDocument(dto());
      // Another request's claim under the same key: what comes back is what the first one stored, not these.
      const another: ClaimArguments = ['acme-erp', key, 'e'.repeat(64), 86400, 202, '{"answer":"other"}', '/y', null];
      expect(await documents.createClaimed(again, another)).toEqual({
        created: false,
        reason: 'not_claimed',
        stored: { fingerprint: 'f'.repeat(64), status: 201, body: '{"answer":true}', location: '/x' },
      });
      expect(await documents.find(m.db, again.id)).toBeNull();

      const first = dto({ providerReference: `PAY-${unique()}` });
      await documents.createClaimed(draftDocument(first), claim());
      const duplicateKey = `key-${unique()}`;
      expect(await documents.createClaimed(draftDocument(dto({ externalId: first.externalId })), claim(duplicateKey))).toEqual({ created: false, reason: 'duplicate' });
      // The claim went with the failed statement.
      expect(await count('idempotency_records', 'idempotency_key = $1', [duplicateKey])).toBe(0);

      const waitedFor = `PAY-${unique()}`;
      await check.query(
        `INSERT INTO webhook_events (event_id, event_type, status, provider_reference, outcome, raw_body, body_sha256, signed_at)
         VALUES ($1, 'PAYMENT_STATUS', 'PAID', $2, 'unmatched', '\\x7b7d', '\\x00', now())`,
        [`evt-${unique()}`, waitedFor],
      );
      const waitingKey = `key-${unique()}`;
      expect(await documents.createClaimed(draftDocument(dto({ providerReference: waitedFor })), claim(waitingKey))).toEqual({ created: false, reason: 'payments_waiting' });
      expect(await count('idempotency_records', 'idempotency_key = $1', [waitingKey])).toBe(0);
      expect(await count('documents', 'provider_reference = $1', [waitedFor])).toBe(0);
    });
  });

  describe('the general way', () => {
    it('inserts a document with its event, or nothing for a duplicate, and tells which duplicate', async () => {
      const draft = draftDocument(dto());
      const inserted = await m.db.transaction((tx) => documents.insert(tx, draft));
      expect(inserted).toMatchObject({ id: draft.id, status: 'PENDING_PAYMENT', seq: expect.any(String) });
      expect(await m.db.transaction((tx) => documents.insert(tx, draftDocument(dto({ externalId: draft.externalId }))))).toBeNull();
      expect(await documents.externalIdTaken(m.db, 'acme-erp', draft.externalId)).toBe(true);
      expect(await documents.externalIdTaken(m.db, 'other-source', draft.externalId)).toBe(false);
    });

    it('changes a status with its feed event, and only records a payment status that changes none', async () => {
      const draft = draftDocument(dto());
      await m.db.transaction((tx) => documents.insert(tx, draft));
      const recorded = await m.db.transaction((tx) => documents.change(tx, { id: draft.id, status: 'PENDING_PAYMENT', previous: 'PENDING_PAYMENT', paymentStatus: 'PROCESSING', eventId: 'evt-1' }));
      expect(recorded).toMatchObject({ status: 'PENDING_PAYMENT', paymentStatus: 'PROCESSING', paymentLastEventId: 'evt-1', paymentUpdatedAt: expect.any(Date) });
      const paid = await m.db.transaction((tx) => documents.change(tx, { id: draft.id, status: 'PAID', previous: 'PENDING_PAYMENT', paymentStatus: 'PAID', eventId: 'evt-2' }));
      expect(paid.status).toBe('PAID');
      const { rows } = await check.query(`SELECT type, status, previous_status FROM document_events WHERE document_id = $1 ORDER BY id`, [draft.id]);
      expect(rows).toEqual([
        { type: 'document.created', status: 'PENDING_PAYMENT', previous_status: null },
        { type: 'document.status_changed', status: 'PAID', previous_status: 'PENDING_PAYMENT' },
      ]);
    });

    it('pages a source\u2019s documents newest first, by status, type and externalId', async () => {
      const source = `pager-${unique()}`;
      const drafts = [];
      for (let i = 0; i < 5; i += 1) {
        const draft = draftDocument(dto({ source, type: i % 2 ? 'RECEIPT' : 'INVOICE' }));
        await m.db.transaction((tx) => documents.insert(tx, draft));
        drafts.push(draft);
      }
      const all = await documents.page(source, {}, 10);
      expect(all.map((d) => d.id)).toEqual(drafts.map((d) => d.id).reverse());
      expect((await documents.page(source, { type: 'RECEIPT' }, 10)).map((d) => d.id)).toEqual([drafts[3].id, drafts[1].id]);
      expect((await documents.page(source, { before: all[1].seq }, 2)).map((d) => d.id)).toEqual([drafts[2].id, drafts[1].id]);
      expect((await documents.page(source, { externalId: drafts[2].externalId }, 10)).map((d) => d.id)).toEqual([drafts[2].id]);
      expect(await documents.page(source, { externalId: drafts[2].externalId, status: 'PAID' }, 10)).toEqual([]);
    });
  });
});

import fc from 'fast-check';
import { Client } from 'pg';
import { cancelDocument, documentBody, IssuedKey, newIdempotencyKey, newSourceWithKey, postDocument } from '../support/factories.js';
import { startTestApp, TestApp } from '../support/test-app.js';

describe('documents API', () => {
  let t: TestApp;
  let db: Client;
  let acme: IssuedKey;
  let other: IssuedKey;

  const get = (key: string, url: string) => t.app.inject({ method: 'GET', url, headers: { 'x-api-key': key } });
  const countDocuments = async (source: string) => Number((await db.query('SELECT count(*) FROM documents WHERE source = $1', [source])).rows[0].count);

  beforeAll(async () => {
    // The property tests (and their shrinking) send hundreds of requests with one key: not the limit under test here.
    t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '100000' } });
    db = t.db;
    acme = await newSourceWithKey(t.app);
    other = await newSourceWithKey(t.app);
  });
  afterAll(() => t.close());

  describe('POST /api/v1/documents', () => {
    it('answers a create exactly as a read of the document then does, byte for byte, and stores that answer (property)', async () => {
      // The answer is made from the row PostgreSQL returns: every value must come out as a read gives it.
      const text = (maxLength: number) =>
        fc.string({ unit: 'grapheme', minLength: 1, maxLength }).filter((v) => !v.includes('\u0000') && v.length <= maxLength);
      const amount = fc
        .tuple(fc.nat({ max: 3 }), fc.bigInt({ min: 0n, max: 999_999_999_999n }), fc.option(fc.stringMatching(/^[0-9]{1,4}$/), { nil: undefined }))
        .map(([zeros, whole, fraction]) => `${'0'.repeat(zeros)}${whole}${fraction === undefined ? '' : `.${fraction}`}`)
        .filter((v) => /^\d{1,15}(\.\d{1,4})?$/.test(v));
      const day = fc
        .date({ min: new Date('0100-01-01T00:00:00Z'), max: new Date('9999-12-31T00:00:00Z'), noInvalidDate: true })
        .map((d) => d.toISOString().slice(0, 10));
      const metadataKey = fc.oneof(text(40), fc.nat({ max: 4_294_967_300 }).map(String)).filter((k) => !['constructor', '__proto__', 'prototype'].includes(k));
      const document = fc.record({
        externalId: text(96),
        taxpayer: fc.record({ taxId: text(64), name: text(200), country: fc.constantFrom('DE', 'FR', 'US') }),
        issueDate: day,
        currency: fc.constantFrom('EUR', 'USD', 'JPY'),
        totalAmount: amount,
        metadata: fc.option(
          fc.dictionary(
            metadataKey,
            fc.string({ unit: 'grapheme', maxLength: 20 }).filter((v) => !v.includes('\u0000') && v.length <= 500),
            { maxKeys: 20 },
          ),
          { nil: undefined },
        ),
        withReference: fc.boolean(),
      });
      await fc.assert(
        fc.asyncProperty(document, async ({ withReference, ...fields }) => {
          const key = newIdempotencyKey();
          // Unique per run, so that shrinking a failure never turns it into a duplicate.
          const body = {
            ...documentBody(acme.source),
            ...fields,
            externalId: `${fields.externalId}-${key}`,
            taxAmount: '0',
            ...(withReference && { providerReference: `PAY-${key}` }),
          };
          const created = await postDocument(t.app, acme.key, body, key);
          expect(created.statusCode).toBe(201);
          const read = await get(acme.key, created.headers.location as string);
          expect(read.body).toBe(created.body);
          const stored = await db.query('SELECT response_body FROM idempotency_records WHERE idempotency_key = $1', [key]);
          expect(stored.rows[0].response_body).toBe(created.body);
        }),
        { numRuns: 60 },
      );
    });

    it("answers dates as YYYY-MM-DD, in the create's answer and in reads alike, whatever the database's DateStyle", async () => {
      const database = new URL(t.databaseUrl).pathname.slice(1);
      await db.query(`ALTER DATABASE ${database} SET datestyle = 'SQL, DMY'`);
      // New connections get the database's DateStyle, unless the gateway's session settings override it.
      const other = await startTestApp({ databaseUrl: t.databaseUrl, env: { RATE_LIMIT_PER_MINUTE: '100000' } });
      try {
        const created = await postDocument(other.app, acme.key, documentBody(acme.source, { issueDate: '2026-02-03' }));
        const read = await other.app.inject({ method: 'GET', url: created.headers.location as string, headers: { 'x-api-key': acme.key } });
        expect([created.json().issueDate, read.json().issueDate]).toEqual(['2026-02-03', '2026-02-03']);
        expect(read.body).toBe(created.body);
      } finally {
        await other.close();
        await db.query(`ALTER DATABASE ${database} RESET datestyle`);
      }
    });

    it('creates the document: 201, Location, and every field of the OpenAPI document', async () => {
      const body = documentBody(acme.source, {
        providerReference: `PAY-${Date.now()}`,
        metadata: { costCenter: 'CC-42' },
        totalAmount: '1234567890.1234',
        taxAmount: '0.5',
      });
      const res = await postDocument(t.app, acme.key, body);
      expect(res.statusCode).toBe(201);
      const doc = res.json();
      expect(res.headers.location).toBe(`/api/v1/documents/${doc.id}`);
      expect(doc).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        source: acme.source,
        externalId: body.externalId,
        type: 'INVOICE',
        taxpayer: { taxId: 'DE123456789', name: 'Muster GmbH', country: 'DE' },
        issueDate: '2026-11-20',
        currency: 'EUR',
        totalAmount: '1234567890.1234',
        taxAmount: '0.5',
        providerReference: body.providerReference,
        status: 'PENDING_PAYMENT',
        payment: { status: null, lastEventId: null, updatedAt: null },
        metadata: { costCenter: 'CC-42' },
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updatedAt: doc.createdAt,
      });
      const stored = await db.query('SELECT pg_typeof(total_amount)::text AS type, total_amount::text AS total FROM documents WHERE id = $1', [doc.id]);
      expect(stored.rows[0]).toEqual({ type: 'numeric', total: '1234567890.1234' });
      expect((await get(acme.key, res.headers.location as string)).json()).toEqual(doc);
    });

    it('keeps metadata keys that are names of object methods', async () => {
      const metadata = { toString: 'a', valueOf: 'b', hasOwnProperty: 'c' };
      const res = await postDocument(t.app, acme.key, documentBody(acme.source, { metadata }));
      expect(res.statusCode).toBe(201);
      expect(res.json().metadata).toEqual(metadata);
    });

    it('defaults providerReference to null and metadata to {}', async () => {
      const res = await postDocument(t.app, acme.key, documentBody(acme.source));
      expect(res.json()).toMatchObject({ providerReference: null, metadata: {} });
    });

    const invalid: Array<[string, Record<string, unknown>, string]> = [
      ['no source', { source: undefined }, 'source'],
      ['no externalId', { externalId: undefined }, 'externalId'],
      ['an empty externalId', { externalId: '' }, 'externalId'],
      ['a 129-character externalId', { externalId: 'x'.repeat(129) }, 'externalId'],
      ['an unknown type', { type: 'BILL' }, 'type'],
      ['no taxpayer', { taxpayer: undefined }, 'taxpayer'],
      ['a taxpayer that is a string', { taxpayer: 'Muster' }, 'taxpayer'],
      ['a 65-character taxId', { taxpayer: { taxId: 'x'.repeat(65), name: 'n', country: 'DE' } }, 'taxpayer.taxId'],
      ['an empty taxpayer name', { taxpayer: { taxId: 't', name: '', country: 'DE' } }, 'taxpayer.name'],
      ['a lower-case country', { taxpayer: { taxId: 't', name: 'n', country: 'de' } }, 'taxpayer.country'],
      ['an unassigned country', { taxpayer: { taxId: 't', name: 'n', country: 'XX' } }, 'taxpayer.country'],
      ['an unknown taxpayer field', { taxpayer: { taxId: 't', name: 'n', country: 'DE', vat: 1 } }, 'taxpayer.vat'],
      ['a date that does not exist', { issueDate: '2026-02-30' }, 'issueDate'],
      ['a date without padding', { issueDate: '2026-1-5' }, 'issueDate'],
      ['a date-time', { issueDate: '2026-11-20T00:00:00Z' }, 'issueDate'],
      ['a lower-case currency', { currency: 'eur' }, 'currency'],
      ['a made-up currency', { currency: 'ABC' }, 'currency'],
      ['an amount as a number', { totalAmount: 119 }, 'totalAmount'],
      ['five decimals', { totalAmount: '1.00001' }, 'totalAmount'],
      ['a negative amount', { totalAmount: '-1.00' }, 'totalAmount'],
      ['16 integer digits', { totalAmount: '1234567890123456' }, 'totalAmount'],
      ['tax above total', { totalAmount: '10.00', taxAmount: '10.0001' }, 'taxAmount'],
      ['a providerReference with a space', { providerReference: 'PAY 1' }, 'providerReference'],
      ['a 129-character providerReference', { providerReference: 'P'.repeat(129) }, 'providerReference'],
      ['21 metadata keys', { metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata'],
      ['a 41-character metadata key', { metadata: { ['k'.repeat(41)]: 'v' } }, 'metadata'],
      ['a 501-character metadata value', { metadata: { k: 'v'.repeat(501) } }, 'metadata'],
      ['a non-string metadata value', { metadata: { k: 1 } }, 'metadata'],
      ['metadata that is an array', { metadata: ['a'] }, 'metadata'],
      ['an unknown field', { priority: 'high' }, 'priority'],
      ['a NUL character in externalId', { externalId: 'A\u0000B' }, 'externalId'],
      ['a NUL character in a taxpayer name', { taxpayer: { taxId: 't', name: 'Mu\u0000ster', country: 'DE' } }, 'taxpayer.name'],
      ['a NUL character in a metadata value', { metadata: { note: 'x\u0000' } }, 'metadata.note'],
      ['a metadata key "constructor"', { metadata: { constructor: 'x' } }, 'metadata.constructor'],
      ['an unpaired surrogate in externalId', { externalId: 'A\ud800B' }, 'externalId'],
      ['an unpaired surrogate in a metadata value', { metadata: { note: 'x\udfff' } }, 'metadata.note'],
      ['an unpaired surrogate in a metadata key', { metadata: { 'n\ud83d': 'x' } }, 'metadata.n\ud83d'],
    ];

    it.each(invalid)('refuses %s with 422 naming %s, and creates nothing', async (_name, overrides, field) => {
      const before = await countDocuments(acme.source);
      const res = await postDocument(t.app, acme.key, documentBody(acme.source, overrides));
      expect(res.statusCode).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json()).toMatchObject({ code: 'VALIDATION_ERROR', status: 422 });
      expect(res.json().errors).toEqual(expect.arrayContaining([{ field, message: expect.any(String) }]));
      expect(await countDocuments(acme.source)).toBe(before);
    });

    it('says what is wrong with each field, by its path: left out, null, a reserved key', async () => {
      const before = await countDocuments(acme.source);
      const { externalId: _externalId, source: _source, ...withoutIds } = documentBody(acme.source);
      const missing = await postDocument(t.app, acme.key, withoutIds);
      expect(missing.json().errors).toEqual([
        { field: 'source', message: 'is required' },
        { field: 'externalId', message: 'is required' },
      ]);
      // An optional field is left out when there is none: null is not a way of saying so, nor a bad pattern.
      const nulls = await postDocument(
        t.app,
        acme.key,
        documentBody(acme.source, { providerReference: null, metadata: null, taxpayer: { taxId: null, name: 'n', country: 'DE' } }),
      );
      expect(nulls.json().errors).toEqual([
        { field: 'taxpayer.taxId', message: 'is required' },
        { field: 'providerReference', message: 'must be left out rather than sent as null' },
        { field: 'metadata', message: 'must be left out rather than sent as null' },
      ]);
      // Valid JSON, so never "is not valid JSON": the reserved key is named by its path.
      const proto = await postDocument(t.app, acme.key, JSON.stringify(documentBody(acme.source)).replace(/\}$/, ',"metadata":{"__proto__":"x"}}'));
      expect(proto.json()).toMatchObject({
        status: 422,
        code: 'VALIDATION_ERROR',
        detail: 'The request is not valid',
        errors: [{ field: 'metadata.__proto__', message: 'is a reserved name and cannot be used as a key' }],
      });
      expect(await countDocuments(acme.source)).toBe(before);
    });

    it('names every bad field at once', async () => {
      const res = await postDocument(t.app, acme.key, { source: acme.source, type: 'X', taxpayer: { country: 'de' }, totalAmount: '1', taxAmount: '2' });
      const fields = res.json().errors.map((e: { field: string }) => e.field);
      expect(fields).toEqual(
        expect.arrayContaining(['externalId', 'type', 'taxpayer.taxId', 'taxpayer.name', 'taxpayer.country', 'issueDate', 'currency', 'taxAmount']),
      );
    });

    it.each(['[]', '"text"', '42', 'null'])('refuses a JSON body that is not an object (%s) with 422', async (payload) => {
      const res = await postDocument(t.app, acme.key, payload);
      expect(res.statusCode).toBe(422);
      expect(res.json().code).toBe('VALIDATION_ERROR');
    });

    it("answers 401 when the body names another source than the key's, and creates nothing", async () => {
      const res = await postDocument(t.app, acme.key, documentBody(other.source));
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('UNAUTHORIZED');
      expect(await countDocuments(other.source)).toBe(0);
    });

    it('answers 409 DUPLICATE_DOCUMENT for a repeated externalId of the same source, not of another', async () => {
      const body = documentBody(acme.source);
      expect((await postDocument(t.app, acme.key, body)).statusCode).toBe(201);
      const again = await postDocument(t.app, acme.key, { ...body, totalAmount: '5.00', taxAmount: '0.00' });
      expect(again.statusCode).toBe(409);
      expect(again.json()).toMatchObject({ code: 'DUPLICATE_DOCUMENT', status: 409 });
      expect((await postDocument(t.app, other.key, { ...body, source: other.source })).statusCode).toBe(201);
    });

    it('answers 409 DUPLICATE_DOCUMENT for a providerReference the same source used, and 201 when another source uses it', async () => {
      const providerReference = `PAY-SHARED-${Date.now()}`;
      expect((await postDocument(t.app, acme.key, documentBody(acme.source, { providerReference }))).statusCode).toBe(201);
      const again = await postDocument(t.app, acme.key, documentBody(acme.source, { providerReference }));
      expect(again.statusCode).toBe(409);
      expect(again.json()).toMatchObject({ code: 'DUPLICATE_DOCUMENT', detail: 'A document with this providerReference already exists for this source' });
      // Nothing tells another source that the reference is in use.
      const other_ = await postDocument(t.app, other.key, documentBody(other.source, { providerReference }));
      expect(other_.statusCode).toBe(201);
      expect(other_.json()).toMatchObject({ providerReference, status: 'PENDING_PAYMENT', payment: { status: null } });
    });
  });

  describe('GET /api/v1/documents/{id}', () => {
    it("answers 404 for another source's document, an unknown id and a non-UUID", async () => {
      const created = (await postDocument(t.app, acme.key, documentBody(acme.source))).json();
      expect((await get(acme.key, `/api/v1/documents/${created.id}`)).statusCode).toBe(200);
      for (const url of [`/api/v1/documents/${created.id}`]) {
        const res = await get(other.key, url);
        expect(res.statusCode).toBe(404);
        expect(res.json().code).toBe('NOT_FOUND');
      }
      for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '1%27%20OR%201%3D1']) {
        expect((await get(acme.key, `/api/v1/documents/${id}`)).statusCode).toBe(404);
      }
    });
  });

  describe('GET /api/v1/documents', () => {
    let source: IssuedKey;
    const created: Array<{ id: string; externalId: string; type: string }> = [];

    beforeAll(async () => {
      source = await newSourceWithKey(t.app);
      for (let i = 0; i < 7; i++) {
        const type = i % 2 ? 'RECEIPT' : 'INVOICE';
        created.push((await postDocument(t.app, source.key, documentBody(source.source, { type }))).json());
      }
      await cancelDocument(t.app, source.key, created[0].id);
    });

    it('lists only the key\u2019s source, newest first, 20 by default', async () => {
      const res = await get(source.key, '/api/v1/documents');
      expect(res.statusCode).toBe(200);
      expect(res.json().data.map((d: { id: string }) => d.id)).toEqual(created.map((d) => d.id).reverse());
      expect(res.json().nextCursor).toBeNull();
    });

    it('filters by status, type and externalId', async () => {
      const cancelled = (await get(source.key, '/api/v1/documents?status=CANCELLED')).json().data;
      expect(cancelled.map((d: { id: string }) => d.id)).toEqual([created[0].id]);
      const receipts = (await get(source.key, '/api/v1/documents?type=RECEIPT')).json().data;
      expect(receipts).toHaveLength(3);
      expect(receipts.every((d: { type: string }) => d.type === 'RECEIPT')).toBe(true);
      const one = (await get(source.key, `/api/v1/documents?externalId=${created[3].externalId}`)).json().data;
      expect(one.map((d: { id: string }) => d.id)).toEqual([created[3].id]);
    });

    it('pages with an opaque cursor, each document exactly once', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const url: string = `/api/v1/documents?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const page = (await get(source.key, url)).json();
        expect(page.data.length).toBeLessThanOrEqual(3);
        seen.push(...page.data.map((d: { id: string }) => d.id));
        cursor = page.nextCursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toEqual(created.map((d) => d.id).reverse());
    });

    it.each([
      ['cursor=null', 'cursor'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['limit=ten', 'limit'],
      ['status=LOST', 'status'],
      ['type=BILL', 'type'],
      ['cursor=garbage', 'cursor'],
      ['cursor=ZTox', 'cursor'],
      // Forged: one above the bigint maximum, which PostgreSQL itself would refuse.
      [`cursor=${Buffer.from('d:9999999999999999999').toString('base64url')}`, 'cursor'],
      [`cursor=${Buffer.from('d:9223372036854775808').toString('base64url')}`, 'cursor'],
      ['sort=asc', 'sort'],
      ['externalId=A%00B', 'externalId'],
    ])('refuses %s with 422 naming %s', async (query, field) => {
      const res = await get(source.key, `/api/v1/documents?${query}`);
      expect(res.statusCode).toBe(422);
      expect(res.json().errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
    });

    it('accepts the limit bounds 1 and 100', async () => {
      expect((await get(source.key, '/api/v1/documents?limit=1')).json().data).toHaveLength(1);
      expect((await get(source.key, '/api/v1/documents?limit=100')).json().data).toHaveLength(7);
    });

    it('stays stable while documents are inserted concurrently: no duplicates, nothing skipped', async () => {
      const busy = await newSourceWithKey(t.app);
      const initial: string[] = [];
      for (let i = 0; i < 25; i++) initial.push((await postDocument(t.app, busy.key, documentBody(busy.source))).json().id);
      let inserting = true;
      const writer = (async () => {
        let n = 0;
        while (inserting && n < 60) {
          await postDocument(t.app, busy.key, documentBody(busy.source));
          n++;
        }
        return n;
      })();
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const url: string = `/api/v1/documents?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const page = (await get(busy.key, url)).json();
        seen.push(...page.data.map((d: { id: string }) => d.id));
        cursor = page.nextCursor;
        await new Promise((r) => setImmediate(r));
      } while (cursor);
      inserting = false;
      const inserted = await writer;
      expect(inserted).toBeGreaterThan(0);
      expect(new Set(seen).size).toBe(seen.length);
      // Everything that existed when paging began is there, in order; newer ones can only lead.
      const fromInitial = seen.filter((id) => initial.includes(id));
      expect(fromInitial).toEqual([...initial].reverse());
      expect(seen.slice(seen.length - initial.length)).toEqual([...initial].reverse());
    });
  });

  describe('POST /api/v1/documents/{id}/cancel', () => {
    it('cancels a pending document, then refuses a second cancel with 409 INVALID_STATE_TRANSITION', async () => {
      const doc = (await postDocument(t.app, acme.key, documentBody(acme.source))).json();
      const res = await cancelDocument(t.app, acme.key, doc.id);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ id: doc.id, status: 'CANCELLED' });
      expect(res.headers.location).toBeUndefined();
      const again = await cancelDocument(t.app, acme.key, doc.id);
      expect(again.statusCode).toBe(409);
      expect(again.json()).toMatchObject({ code: 'INVALID_STATE_TRANSITION' });
      expect((await get(acme.key, `/api/v1/documents/${doc.id}`)).json().status).toBe('CANCELLED');
    });

    it("refuses a paid document with 409, and answers 404 for another source's document", async () => {
      const doc = (await postDocument(t.app, acme.key, documentBody(acme.source))).json();
      await db.query(`UPDATE documents SET status = 'PAID' WHERE id = $1`, [doc.id]);
      expect((await cancelDocument(t.app, acme.key, doc.id)).statusCode).toBe(409);
      const mine = (await postDocument(t.app, acme.key, documentBody(acme.source))).json();
      const res = await cancelDocument(t.app, other.key, mine.id);
      expect(res.statusCode).toBe(404);
      expect((await get(acme.key, `/api/v1/documents/${mine.id}`)).json().status).toBe('PENDING_PAYMENT');
    });

    it('requires an idempotency key, and accepts a JSON content type without a body', async () => {
      const doc = (await postDocument(t.app, acme.key, documentBody(acme.source))).json();
      const res = await cancelDocument(t.app, acme.key, doc.id, null);
      expect(res.statusCode).toBe(422);
      expect(res.json().errors).toEqual([{ field: 'X-Idempotency-Key', message: 'is required' }]);
      expect((await get(acme.key, `/api/v1/documents/${doc.id}`)).json().status).toBe('PENDING_PAYMENT');
      const withBody = await t.app.inject({
        method: 'POST',
        url: `/api/v1/documents/${doc.id}/cancel`,
        headers: { 'x-api-key': acme.key, 'x-idempotency-key': newIdempotencyKey(), 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(withBody.statusCode).toBe(200);
    });
  });
});

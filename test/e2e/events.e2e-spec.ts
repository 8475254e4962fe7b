import { Client } from 'pg';
import { encodeCursor } from '../../src/common/cursor.js';
import { cancelDocument, documentBody, FeedEvent, feedOnceReady, IssuedKey, newSourceWithKey, postDocument } from '../support/factories.js';
import { holdDocumentInsert } from '../support/database.js';
import { startTestApp, TestApp } from '../support/test-app.js';

describe('event feed GET /api/v1/events', () => {
  let t: TestApp;
  const feed = (key: string, query = '') => t.app.inject({ method: 'GET', url: `/api/v1/events${query}`, headers: { 'x-api-key': key } });
  const settled = (key: string, count: number) => feedOnceReady(t.app, key, (events) => events.length >= count, `${count} events in the feed`);

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(() => t.close());

  it('has no events and a null cursor for a new source', async () => {
    const fresh = await newSourceWithKey(t.app);
    const res = await feed(fresh.key);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ data: [], nextCursor: null, hasMore: false });
  });

  it('records creation and status changes oldest first, only of the key\u2019s own source', async () => {
    const mine = await newSourceWithKey(t.app);
    const other = await newSourceWithKey(t.app);
    const doc = (await postDocument(t.app, mine.key, documentBody(mine.source))).json();
    await postDocument(t.app, other.key, documentBody(other.source));
    await cancelDocument(t.app, mine.key, doc.id);
    await settled(mine.key, 2);

    const res = await feed(mine.key);
    const { data, nextCursor, hasMore } = res.json<{ data: FeedEvent[]; nextCursor: string; hasMore: boolean }>();
    expect(data).toEqual([
      { id: expect.any(String), type: 'document.created', documentId: doc.id, status: 'PENDING_PAYMENT', previousStatus: null, createdAt: doc.createdAt },
      {
        id: expect.any(String),
        type: 'document.status_changed',
        documentId: doc.id,
        status: 'CANCELLED',
        previousStatus: 'PENDING_PAYMENT',
        createdAt: expect.any(String),
      },
    ]);
    expect(BigInt(data[1].id)).toBeGreaterThan(BigInt(data[0].id));
    expect(hasMore).toBe(false);

    // Nothing new: the same cursor comes back, never null.
    const caughtUp = (await feed(mine.key, `?after=${nextCursor}`)).json();
    expect(caughtUp).toEqual({ data: [], nextCursor, hasMore: false });
  });

  it('pages with after and limit, with hasMore telling whether to go on', async () => {
    const source = await newSourceWithKey(t.app);
    for (let i = 0; i < 5; i++) await postDocument(t.app, source.key, documentBody(source.source));
    await settled(source.key, 5);
    const first = (await feed(source.key, '?limit=2')).json();
    expect(first.data).toHaveLength(2);
    expect(first.hasMore).toBe(true);
    const second = (await feed(source.key, `?limit=2&after=${first.nextCursor}`)).json();
    const third = (await feed(source.key, `?limit=2&after=${second.nextCursor}`)).json();
    expect([second.data.length, second.hasMore, third.data.length, third.hasMore]).toEqual([2, true, 1, false]);
    const ids = [...first.data, ...second.data, ...third.data].map((e: FeedEvent) => e.id);
    expect(new Set(ids).size).toBe(5);
  });

  // The one-part cursor of an earlier feed (an event id alone) is no cursor any more.
  it.each([
    ['?limit=0', 'limit'],
    ['?limit=101', 'limit'],
    ['?after=nonsense', 'after'],
    ['?after=ZDox', 'after'],
    [`?after=${Buffer.from('e:9999999999999999999').toString('base64url')}`, 'after'],
    [`?after=${encodeCursor('e', '1')}`, 'after'],
    [`?after=${encodeCursor('x', '1')}.${encodeCursor('e', '1')}.${encodeCursor('e', '1')}`, 'after'],
    ['?since=1', 'since'],
  ])('refuses %s with 422 naming %s', async (query, field) => {
    const source = await newSourceWithKey(t.app);
    const res = await feed(source.key, query);
    expect(res.statusCode).toBe(422);
    expect(res.json().errors[0].field).toBe(field);
  });

  it('lets a client paging during concurrent changes see every change exactly once, in order', async () => {
    const source: IssuedKey = await newSourceWithKey(t.app);
    const seen: FeedEvent[] = [];
    let cursor = '';
    const poll = async () => {
      const page = (await feed(source.key, `?limit=7${cursor ? `&after=${cursor}` : ''}`)).json();
      seen.push(...page.data);
      if (page.nextCursor) cursor = page.nextCursor;
      return page.hasMore as boolean;
    };
    let writing = true;
    const poller = (async () => {
      while (writing) await poll();
    })();
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const doc = (await postDocument(t.app, source.key, documentBody(source.source))).json();
        if (i % 3 === 0) await cancelDocument(t.app, source.key, doc.id);
      }),
    );
    writing = false;
    await poller;
    // Every change is committed now, but the feed shows an event only once every older transaction on the
    // server has ended, whatever its database: another test file's may still be running for a while.
    const deadline = Date.now() + 45_000;
    while (seen.length < 40 && Date.now() < deadline) if (!(await poll())) await new Promise((r) => setTimeout(r, 100));

    expect(seen).toHaveLength(40);
    expect(new Set(seen.map((e) => e.id)).size).toBe(40);
    const byDocument = new Map<string, string[]>();
    for (const e of seen) byDocument.set(e.documentId, [...(byDocument.get(e.documentId) ?? []), e.type]);
    expect(byDocument.size).toBe(30);
    for (const types of byDocument.values()) expect(types[0]).toBe('document.created');
  });

  it('does not let a reader page past an event whose transaction commits late', async () => {
    const source = await newSourceWithKey(t.app);
    const doc = (await postDocument(t.app, source.key, documentBody(source.source))).json();
    const start = (await feed(source.key)).json();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let appended!: () => void;
    const wasAppended = new Promise<void>((resolve) => (appended = resolve));
    // A slow writer: takes its event id, then keeps its transaction open.
    const slowClient = new Client({ connectionString: t.databaseUrl });
    await slowClient.connect();
    const slow = (async () => {
      await slowClient.query('BEGIN');
      await slowClient.query(
        `INSERT INTO document_events (source, document_id, type, status, previous_status)
         VALUES ($1, $2, 'document.status_changed', 'PAYMENT_FAILED', 'PENDING_PAYMENT')`,
        [source.source, doc.id],
      );
      appended();
      await gate;
      await slowClient.query('COMMIT');
      await slowClient.end();
    })();
    await wasAppended;
    // A later writer that commits while the slow one is still open.
    const fast = await postDocument(t.app, source.key, documentBody(source.source));
    expect(fast.statusCode).toBe(201);
    const during = (await feed(source.key, `?after=${start.nextCursor}`)).json();
    release();
    await slow;
    const after = (await feed(source.key, `?after=${during.nextCursor}`)).json();
    const seen = [...during.data, ...after.data].map((e: FeedEvent) => e.status);
    expect(seen).toEqual(['PAYMENT_FAILED', 'PENDING_PAYMENT']);
  });
});

describe('event feed with many writers of one source', () => {
  let t: TestApp;
  const feed = (key: string, query = '') => t.app.inject({ method: 'GET', url: `/api/v1/events${query}`, headers: { 'x-api-key': key } });

  beforeAll(async () => {
    // The held create below waits on a lock for as long as the others take: no lock or statement timeout cuts it off.
    t = await startTestApp({ env: { DB_POOL_SIZE: '40', DB_LOCK_TIMEOUT_MS: '600000', DB_STATEMENT_TIMEOUT_MS: '600000' } });
  });
  afterAll(() => t.close());

  it('does not serialise 30 concurrent writers of one source behind one open transaction, and hides them until it ends', async () => {
    const source = await newSourceWithKey(t.app);
    // A create of the same source that keeps its transaction open after writing its document and event.
    const heldBody = documentBody(source.source);
    const hold = await holdDocumentInsert(t.db, t.databaseUrl, heldBody.externalId as string);
    try {
      const held = postDocument(t.app, source.key, heldBody);
      await hold.held();

      // With a per-source lock held to commit these would all wait for the open transaction (and this test would time out).
      const responses = await Promise.all(Array.from({ length: 30 }, () => postDocument(t.app, source.key, documentBody(source.source))));
      expect(responses.map((r) => r.statusCode)).toEqual(Array(30).fill(201));
      // Committed, but behind a transaction still running: not shown yet, so a reader cannot page past the open one.
      const during = (await feed(source.key, '?limit=100')).json();
      expect(during.data).toEqual([]);

      await hold.release();
      const heldDocument = (await held).json();
      const after = (await feed(source.key, '?limit=100')).json();
      const documentIds = after.data.map((e: FeedEvent) => e.documentId);
      expect(documentIds).toHaveLength(31);
      expect(new Set(documentIds)).toEqual(new Set([heldDocument.id, ...responses.map((r) => r.json().id)]));
      // The open transaction started first, so its event comes first in the feed although it committed last.
      expect(documentIds[0]).toBe(heldDocument.id);
    } finally {
      await hold.remove();
    }
  });
});

import { Client } from 'pg';
import { EntityManager } from 'typeorm';
import { AuditLogEntity } from '../../src/admin/audit-log.entity.js';
import { AuditLogRepository } from '../../src/admin/audit-log.repository.js';
import { longestSeconds, parseIsoDuration, shortestSeconds } from '../../src/config/iso-duration.js';
import { PurgeBatch, PurgeRange } from '../../src/database/purge-batch.js';
import { BankEventEntity } from '../../src/documents/bank-event.entity.js';
import { DocumentEventEntity } from '../../src/documents/document-event.entity.js';
import { DocumentEntity } from '../../src/documents/document.entity.js';
import { DocumentEventsRepository } from '../../src/documents/document-events.repository.js';
import { DocumentEventsService } from '../../src/documents/document-events.service.js';
import { PaymentsRepository } from '../../src/documents/payments.repository.js';
import { OutboundDeliveriesRepository } from '../../src/outbound-webhooks/outbound-deliveries.repository.js';
import { OutboundDeliveryAttemptEntity } from '../../src/outbound-webhooks/outbound-delivery-attempt.entity.js';
import { OutboundDeliveryEntity } from '../../src/outbound-webhooks/outbound-delivery.entity.js';
import { RetentionRepository } from '../../src/retention/retention.repository.js';
import { inSequence } from '../support/database.js';
import { mediumModule, Medium } from '../support/medium.js';

/**
 * Each module's purge statement against the real schema: only rows past their period, never more than a
 * batch, the walk along the primary key, what goes with the rows through foreign keys; and the locks and
 * counts the retention service builds on.
 */
describe('retention purges', () => {
  let m: Medium;
  let check: Client;
  let events: DocumentEventsRepository;
  let deliveries: OutboundDeliveriesRepository;
  let payments: PaymentsRepository;
  let audit: AuditLogRepository;
  let locks: RetentionRepository;

  const rows = async <T = Record<string, unknown>>(text: string, values: unknown[] = []) => (await check.query(text, values)).rows as T[];
  const count = async (table: string, where = 'true') => (await rows<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`))[0].n;

  /** A document of `source` with one event per age (in days, oldest first: ids follow time, as in production). */
  const eventsAged = async (source: string, ages: number[]): Promise<string[]> => {
    const [{ id }] = await rows<{ id: string }>(
      `INSERT INTO documents (source, external_id, type, taxpayer_tax_id, taxpayer_name, taxpayer_country, issue_date, currency, total_amount, tax_amount)
       VALUES ($1, gen_random_uuid()::text, 'INVOICE', 'DE1', 'Muster GmbH', 'DE', '2026-01-01', 'EUR', 119, 19) RETURNING id`,
      [source],
    );
    const ids: string[] = [];
    for (const age of ages) {
      const [event] = await rows<{ id: string }>(
        `INSERT INTO document_events (source, document_id, type, status, created_at)
         VALUES ($1, $2, 'document.created', 'PENDING_PAYMENT', now() - make_interval(days => $3)) RETURNING id`,
        [source, id, age],
      );
      ids.push(event.id);
    }
    // The trigger wrote each event's deliveries at now(); in production they share their event's time.
    await check.query(`UPDATE outbound_deliveries d SET created_at = e.created_at FROM document_events e WHERE e.id = d.event_id`);
    return ids;
  };
  const endpointFor = async (source: string) =>
    (
      await rows<{ id: string }>(
        `INSERT INTO webhook_endpoints (source, url, event_types, secret) VALUES ($1, 'https://client.example/hook', '{document.created,document.status_changed}', 'whsec_x') RETURNING id`,
        [source],
      )
    )[0].id;
  const inTransaction = <T>(work: (tx: EntityManager) => Promise<T>) => m.dataSource.transaction(work);
  const purgeAll = async (purge: (tx: EntityManager, range: PurgeRange) => Promise<PurgeBatch>, olderThan: string, limit: number) => {
    const batches: PurgeBatch[] = [];
    let after = '0';
    for (;;) {
      const batch = await inTransaction((tx) => purge(tx, { olderThan, after, limit }));
      batches.push(batch);
      if (!batch.more || batch.last === null) return batches;
      after = batch.last;
    }
  };

  beforeAll(async () => {
    m = await mediumModule({
      entities: [DocumentEntity, DocumentEventEntity, BankEventEntity, OutboundDeliveryEntity, OutboundDeliveryAttemptEntity, AuditLogEntity],
      providers: [DocumentEventsRepository, OutboundDeliveriesRepository, PaymentsRepository, AuditLogRepository, RetentionRepository],
    });
    check = m.check;
    events = m.moduleRef.get(DocumentEventsRepository);
    deliveries = m.moduleRef.get(OutboundDeliveriesRepository);
    payments = m.moduleRef.get(PaymentsRepository);
    audit = m.moduleRef.get(AuditLogRepository);
    locks = m.moduleRef.get(RetentionRepository);
  });
  afterAll(() => m.close());
  beforeEach(async () => {
    await check.query(
      'TRUNCATE document_events, outbound_deliveries, outbound_delivery_attempts, webhook_events, admin_audit_log, webhook_endpoints, documents CASCADE',
    );
  });

  describe('feed events (RETENTION_EVENTS)', () => {
    it('deletes only events past the period, at most a batch at a time, walking the primary key', async () => {
      const ids = await eventsAged('acme-erp', [100, 99, 98, 97, 96, 10, 0]);
      const batches = await purgeAll((tx, range) => events.purge(tx, range), 'P90D', 2);
      expect(batches).toEqual([
        { deleted: 2, last: ids[1], more: true },
        { deleted: 2, last: ids[3], more: true },
        // The batch that meets a recent event ends the walk: everything after it is newer.
        { deleted: 1, last: ids[5], more: false },
      ]);
      expect((await rows<{ id: string }>('SELECT id FROM document_events ORDER BY id')).map((r) => r.id)).toEqual(ids.slice(5));
      // Documents are business records: kept.
      expect(await count('documents')).toBe(1);
    });

    it('finds nothing to do on a table of recent events, and on an empty one', async () => {
      expect(await purgeAll((tx, range) => events.purge(tx, range), 'P90D', 10)).toEqual([{ deleted: 0, last: null, more: false }]);
      const ids = await eventsAged('acme-erp', [5, 1]);
      expect(await purgeAll((tx, range) => events.purge(tx, range), 'P90D', 10)).toEqual([{ deleted: 0, last: ids[1], more: false }]);
    });

    it('takes the events’ push deliveries and attempts with them, and the transaction counts each table', async () => {
      await endpointFor('acme-erp');
      const ids = await eventsAged('acme-erp', [120, 95, 30]);
      await check.query(`UPDATE outbound_deliveries SET status = 'succeeded', last_attempt_at = created_at`);
      await check.query(
        `INSERT INTO outbound_delivery_attempts (delivery_id, attempted_at, duration_ms) SELECT id, created_at, 5 FROM outbound_deliveries, generate_series(1, 3)`,
      );
      // On a connection that has deleted rows before (the session's earlier counts must not show).
      await purgeAll((tx, range) => events.purge(tx, range), 'P1000D', 100);
      const { result: batch, deleted } = await inTransaction((tx) => locks.counting(tx, () => events.purge(tx, { olderThan: 'P90D', after: '0', limit: 100 })));
      expect(batch).toEqual({ deleted: 2, last: ids[2], more: false });
      expect(Object.fromEntries(deleted)).toEqual({ document_events: 2, outbound_deliveries: 2, outbound_delivery_attempts: 6 });
      expect(await count('outbound_deliveries')).toBe(1);
      expect(await count('outbound_delivery_attempts')).toBe(3);
      expect(await count('outbound_deliveries', `event_id = ${ids[2]}`)).toBe(1);
    });

    it('lets a feed cursor into the purged range resume after it', async () => {
      const feed = new DocumentEventsService(events);
      const ids = await eventsAged('feed-src', [100, 100, 100, 1, 0]);
      const first = await feed.list('feed-src', undefined, 2);
      expect(first.data.map((e) => e.id)).toEqual(ids.slice(0, 2));
      await purgeAll((tx, range) => events.purge(tx, range), 'P90D', 100);
      expect(await count('document_events', `id = ${ids[1]}`)).toBe(0);
      const page = await feed.list('feed-src', first.nextCursor!, 10);
      expect(page.data.map((e) => e.id)).toEqual(ids.slice(3));
      expect(page.hasMore).toBe(false);
      // A cursor at the purged end of the feed, on a source whose events are all gone, waits for new ones.
      await eventsAged('gone-src', [100]);
      const { nextCursor: end } = await feed.list('gone-src', undefined, 1);
      await purgeAll((tx, range) => events.purge(tx, range), 'P90D', 100);
      expect(await feed.list('gone-src', end!, 10)).toEqual({ data: [], nextCursor: end, hasMore: false });
    });

    it('reports the newest event’s transaction and the cluster’s next one (the restore check)', async () => {
      expect((await events.transactions()).newest).toBeNull();
      await eventsAged('b-src', [1]);
      await eventsAged('a-src', [1]);
      const [{ max }] = await rows<{ max: string }>('SELECT xid::text AS max FROM document_events ORDER BY xid DESC LIMIT 1');
      const { newest, next } = await events.transactions();
      expect(newest).toBe(max);
      expect(BigInt(next)).toBeGreaterThan(BigInt(newest!));
      const pace = await events.pace(1);
      expect(pace).toMatchObject({ newestXid: max, earlierXid: expect.any(String) });
      expect(BigInt(pace!.earlierXid!)).toBeLessThan(BigInt(max));
    });
  });

  describe('push deliveries (RETENTION_DELIVERIES)', () => {
    it('deletes finished deliveries whose last attempt is past the period, with their attempts; never a pending one', async () => {
      await endpointFor('acme-erp');
      const ids = await eventsAged('acme-erp', [60, 50, 45, 40, 3]);
      const delivery = async (eventId: string) => (await rows<{ id: string }>(`SELECT id FROM outbound_deliveries WHERE event_id = $1`, [eventId]))[0].id;
      const d = await inSequence(ids, delivery);
      await check.query(`UPDATE outbound_deliveries SET status = 'succeeded', last_attempt_at = created_at WHERE id IN (${d[0]}, ${d[4]})`);
      await check.query(`UPDATE outbound_deliveries SET status = 'failed', last_attempt_at = created_at + interval '3 days' WHERE id = ${d[1]}`);
      // Created long ago, but retried until recently: kept until its last attempt is old enough.
      await check.query(`UPDATE outbound_deliveries SET status = 'failed', last_attempt_at = now() - interval '2 days' WHERE id = ${d[2]}`);
      // Still pending (an endpoint that is down, or disabled): kept, whatever its age.
      await check.query(`UPDATE outbound_deliveries SET attempts = 4, last_attempt_at = created_at WHERE id = ${d[3]}`);
      await check.query(
        `INSERT INTO outbound_delivery_attempts (delivery_id, attempted_at, duration_ms) SELECT id, created_at, 5 FROM outbound_deliveries, generate_series(1, 2)`,
      );

      const batches = await purgeAll((tx, range) => deliveries.purge(tx, range), 'P30D', 2);
      expect(batches).toEqual([
        { deleted: 2, last: d[1], more: true },
        { deleted: 0, last: d[3], more: true },
        { deleted: 0, last: d[4], more: false },
      ]);
      expect((await rows<{ id: string }>('SELECT id FROM outbound_deliveries ORDER BY id')).map((r) => r.id)).toEqual(d.slice(2));
      expect(await count('outbound_delivery_attempts')).toBe(6);
      // Their events stay: they have a period of their own.
      expect(await count('document_events')).toBe(5);
    });

    it('leaves a delivery that is retried (pending again) while the purge waits for it', async () => {
      await endpointFor('acme-erp');
      await eventsAged('acme-erp', [60]);
      await check.query(`UPDATE outbound_deliveries SET status = 'failed', last_attempt_at = created_at`);
      const retrying = new Client({ connectionString: m.url });
      await retrying.connect();
      try {
        await retrying.query('BEGIN');
        await retrying.query(`UPDATE outbound_deliveries SET status = 'pending', retry_step = 0, next_attempt_at = now()`);
        const purge = inTransaction((tx) => deliveries.purge(tx, { olderThan: 'P30D', after: '0', limit: 10 }));
        await new Promise((resolve) => setTimeout(resolve, 200));
        await retrying.query('COMMIT');
        expect((await purge).deleted).toBe(0);
        expect(await count('outbound_deliveries', `status = 'pending'`)).toBe(1);
      } finally {
        await retrying.end();
      }
    });
  });

  describe('bank events (RETENTION_BANK_EVENTS) and audit entries (RETENTION_AUDIT)', () => {
    it('deletes bank events received before the period in batches, each with its duplicates', async () => {
      const insert = (eventId: string, outcome: string, days: number) =>
        outcome === 'duplicate'
          ? check.query(
              `INSERT INTO webhook_events (event_id, outcome, body_sha256, signed_at, received_at) VALUES ($1, 'duplicate', sha256('x'), now(), now() - make_interval(days => $2))`,
              [eventId, days],
            )
          : check.query(
              `INSERT INTO webhook_events (event_id, event_type, status, provider_reference, outcome, raw_body, body_sha256, signed_at, received_at)
               VALUES ($1, 'PAYMENT_STATUS', 'PAID', 'PAY-1', $2, 'x', sha256('x'), now(), now() - make_interval(days => $3))`,
              [eventId, outcome, days],
            );
      await insert('evt-1', 'applied', 120);
      await insert('evt-1', 'duplicate', 119);
      await insert('evt-2', 'unmatched', 100);
      await insert('evt-3', 'applied', 10);
      // The bank repeated evt-1 recently: the repeat goes with the event, which it shows.
      await insert('evt-1', 'duplicate', 2);
      await insert('evt-3', 'duplicate', 1);
      const batches = await purgeAll((tx, range) => payments.purge(tx, range), 'P90D', 2);
      expect(batches.map((b) => b.deleted)).toEqual([3, 1]);
      expect(await rows('SELECT event_id, outcome FROM webhook_events ORDER BY id')).toEqual([
        { event_id: 'evt-3', outcome: 'applied' },
        { event_id: 'evt-3', outcome: 'duplicate' },
      ]);
      // Found by their index, not by reading the table (seq scans off: a table this small would be read whole).
      await check.query('BEGIN');
      await check.query('SET LOCAL enable_seqscan = off');
      const plan = await rows<{ 'QUERY PLAN': string }>(`EXPLAIN SELECT 1 FROM webhook_events WHERE outcome = 'duplicate' AND event_id = 'evt-3'`);
      await check.query('COMMIT');
      expect(plan.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/idx_webhook_events_duplicates/);
    });

    it('deletes audit entries written before the period', async () => {
      for (const days of [500, 401, 399, 0]) {
        await check.query(
          `INSERT INTO admin_audit_log (action, remote_address, created_at) VALUES ('api_key.created', '127.0.0.1', now() - make_interval(days => $1))`,
          [days],
        );
      }
      const batches = await purgeAll((tx, range) => audit.purge(tx, range), 'P400D', 1000);
      expect(batches).toEqual([{ deleted: 2, last: expect.any(String), more: false }]);
      expect(await count('admin_audit_log')).toBe(2);
    });
  });

  describe('what the retention service builds on', () => {
    it('lets one transaction at a time hold the purge locks of a table, without waiting', async () => {
      const other = new Client({ connectionString: m.url });
      await other.connect();
      try {
        let release!: () => void;
        let locked!: () => void;
        const isLocked = new Promise<void>((resolve) => (locked = resolve));
        const holding = inTransaction(async (tx) => {
          expect(await locks.tryLock(tx, ['document_events', 'outbound_deliveries'])).toBe(true);
          await new Promise<void>((resolve) => {
            release = resolve;
            locked();
          });
        });
        await isLocked;
        // Any one table in common is enough to be refused; a table apart is free.
        expect(await inTransaction((tx) => locks.tryLock(tx, ['outbound_delivery_attempts', 'outbound_deliveries']))).toBe(false);
        expect(await inTransaction((tx) => locks.tryLock(tx, ['webhook_events']))).toBe(true);
        release();
        await holding;
        expect(await inTransaction((tx) => locks.tryLock(tx, ['outbound_deliveries']))).toBe(true);
      } finally {
        await other.end();
      }
    });

    it.each(['P90D', 'PT12H', 'P2W', 'P1DT1H1M1S', 'P1M', 'P1Y2M3DT4H5M6S', 'P400D'])(
      'hands PostgreSQL %s, which reads it as the parser does',
      async (text) => {
        const [{ seconds }] = await rows<{ seconds: string }>(
          `SELECT extract(epoch FROM ('2026-02-15T00:00:00Z'::timestamptz + $1::interval) - '2026-02-15T00:00:00Z'::timestamptz)::text AS seconds`,
          [text],
        );
        const parsed = parseIsoDuration(text)!;
        expect(Number(seconds)).toBeGreaterThanOrEqual(shortestSeconds(parsed));
        expect(Number(seconds)).toBeLessThanOrEqual(longestSeconds(parsed));
      },
    );
  });
});

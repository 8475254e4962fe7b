import { DataSource } from 'typeorm';
import { OutboundDeliveriesRepository } from '../../src/outbound-webhooks/outbound-deliveries.repository.js';
import { OutboundDeliveryAttemptEntity } from '../../src/outbound-webhooks/outbound-delivery-attempt.entity.js';
import { OutboundDeliveryEntity } from '../../src/outbound-webhooks/outbound-delivery.entity.js';
import { mediumModule, Medium } from '../support/medium.js';

describe('OutboundDeliveriesRepository', () => {
  let m: Medium;
  let deliveries: OutboundDeliveriesRepository;
  let dataSource: DataSource;
  let endpoint: string;
  let ids: string[];

  beforeAll(async () => {
    m = await mediumModule({ entities: [OutboundDeliveryEntity, OutboundDeliveryAttemptEntity], providers: [OutboundDeliveriesRepository] });
    deliveries = m.moduleRef.get(OutboundDeliveriesRepository);
    dataSource = m.dataSource;
    // One endpoint, and four events whose deliveries the feed's trigger enqueues for it.
    endpoint = (
      await m.check.query(
        `INSERT INTO webhook_endpoints (source, url, event_types, secret) VALUES ('acme-erp', 'https://client.example/hook', ARRAY['document.created'], 'whsec_x') RETURNING id`,
      )
    ).rows[0].id;
    await m.check.query(
      `INSERT INTO documents (source, external_id, type, taxpayer_tax_id, taxpayer_name, taxpayer_country, issue_date, currency, total_amount, tax_amount)
       SELECT 'acme-erp', 'INV-' || n, 'INVOICE', 'DE1', 'M', 'DE', '2026-11-20', 'EUR', 1, 0 FROM generate_series(1, 4) n`,
    );
    await m.check.query(
      `INSERT INTO document_events (source, document_id, type, status) SELECT source, id, 'document.created', status FROM documents ORDER BY external_id`,
    );
    ids = (await m.check.query(`SELECT id FROM outbound_deliveries ORDER BY id`)).rows.map((row) => row.id);
    await m.check.query(`UPDATE outbound_deliveries SET status = 'failed', attempts = 9 WHERE id = $1`, [ids[0]]);
    await m.check.query(`UPDATE outbound_deliveries SET attempts = 1 WHERE id = $1`, [ids[1]]);
    await m.check.query(`UPDATE outbound_deliveries SET status = 'succeeded', attempts = 1 WHERE id = $1`, [ids[2]]);
    // The second delivery failed once and waits for its retry; the third failed, then succeeded; the first
    // failed twice and gave up.
    await m.check.query(
      `INSERT INTO outbound_delivery_attempts (delivery_id, attempted_at, duration_ms, response_status, error)
       VALUES ($1, now(), 5, 500, 'http_error'), ($1, now(), 5, 204, NULL), ($2, now(), 5, 500, 'http_error'),
              ($3, now(), 5, 503, 'http_error'), ($3, now(), 15000, NULL, 'timeout')`,
      [ids[2], ids[1], ids[0]],
    );
  });
  afterAll(() => m.close());

  it('pages an endpoint\u2019s delivery log newest first, by status, and administrators\u2019 view across sources', async () => {
    expect(ids).toHaveLength(4);
    expect((await deliveries.page(endpoint, {}, 10)).map((d) => d.id)).toEqual([...ids].reverse());
    expect((await deliveries.page(endpoint, { status: 'pending' }, 10)).map((d) => d.id)).toEqual([ids[3], ids[1]]);
    expect((await deliveries.page(endpoint, { before: ids[2] }, 1)).map((d) => d.id)).toEqual([ids[1]]);
    expect((await deliveries.pageForAdmin({ attention: true }, 10)).map((d) => d.id)).toEqual([ids[1], ids[0]]);
    expect(await deliveries.pageForAdmin({ source: 'another-source' }, 10)).toEqual([]);
    const [eventOfFirst] = (await m.check.query(`SELECT event_id FROM outbound_deliveries WHERE id = $1`, [ids[0]])).rows;
    expect((await deliveries.pageForAdmin({ eventIds: [String(eventOfFirst.event_id)] }, 10)).map((d) => d.id)).toEqual([ids[0]]);
    expect(await deliveries.pageForAdmin({ eventIds: [] }, 10)).toEqual([]);
  });

  it('counts attempts per time bucket: succeeded, retried (its delivery went on), and failed only for the last of a delivery that gave up', async () => {
    const buckets = await deliveries.attemptsPerBucket(1, 60);
    expect(buckets).toEqual([{ at: expect.any(Date), succeeded: 1, retried: 3, failed: 1 }]);
  });

  it('restarts a delivery that has not succeeded, and deletes an endpoint\u2019s deliveries with their attempts', async () => {
    const restarted = await dataSource.transaction((tx) => deliveries.restart(tx, ids[0]));
    expect(restarted).toMatchObject({ id: ids[0], status: 'pending', retryStep: 0, nextAttemptAt: expect.any(Date) });
    expect(await dataSource.transaction((tx) => deliveries.restart(tx, ids[2]))).toBeNull();
    expect(await deliveries.find(ids[2], endpoint)).toMatchObject({ status: 'succeeded' });
    expect(await deliveries.find(ids[2], '00000000-0000-4000-8000-000000000000')).toBeNull();
    await dataSource.transaction((tx) => deliveries.deleteOfEndpoint(tx, endpoint));
    expect(
      (await m.check.query(`SELECT (SELECT count(*) FROM outbound_deliveries)::int AS d, (SELECT count(*) FROM outbound_delivery_attempts)::int AS a`)).rows,
    ).toEqual([{ d: 0, a: 0 }]);
  });
});

import { Client } from 'pg';
import { DeliveryClaimsRepository } from '../../src/outbound-webhooks/delivery-claims.repository.js';
import { OutboundDeliveryEntity } from '../../src/outbound-webhooks/outbound-delivery.entity.js';
import { mediumModule, Medium } from '../support/medium.js';

describe('DeliveryClaimsRepository', () => {
  let m: Medium;
  let claims: DeliveryClaimsRepository;
  let check: Client;
  let endpoints: string[];

  const request = (instance: string, overrides: Partial<Parameters<DeliveryClaimsRepository['claim']>[0]> = {}) => ({
    limit: 100,
    leaseSeconds: 60,
    instance,
    perEndpoint: 3,
    held: new Map<string, number>(),
    minAgeSeconds: 0,
    ...overrides,
  });

  beforeAll(async () => {
    m = await mediumModule({ entities: [OutboundDeliveryEntity], providers: [DeliveryClaimsRepository] });
    claims = m.moduleRef.get(DeliveryClaimsRepository);
    check = m.check;
    // Two endpoints of one source, and ten events whose deliveries the feed trigger enqueues for both.
    endpoints = (
      await check.query(
        `INSERT INTO webhook_endpoints (source, url, event_types, secret)
         SELECT 'acme-erp', 'https://example.com/' || n, ARRAY['document.created'], 'whsec_x' FROM generate_series(1, 2) n RETURNING id`,
      )
    ).rows.map((row) => row.id);
    await check.query(
      `INSERT INTO documents (id, source, external_id, type, taxpayer_tax_id, taxpayer_name, taxpayer_country, issue_date, currency, total_amount, tax_amount)
       SELECT gen_random_uuid(), 'acme-erp', 'INV-' || n, 'INVOICE', 'DE1', 'M', 'DE', '2026-11-20', 'EUR', 1, 0 FROM generate_series(1, 10) n`,
    );
    await check.query(`INSERT INTO document_events (source, document_id, type, status) SELECT source, id, 'document.created', status FROM documents`);
  });
  afterAll(() => m.close());

  it('leases at most each endpoint\u2019s share, less what the instance holds, and never the same delivery to two instances', async () => {
    const [first, second] = await Promise.all([claims.claim(request('one')), claims.claim(request('two', { held: new Map([[endpoints[0], 2]]) }))]);
    const perEndpoint = (rows: { endpointId: string }[], endpoint: string) => rows.filter((row) => row.endpointId === endpoint).length;
    expect(perEndpoint(first.claimed, endpoints[0])).toBe(3);
    expect(perEndpoint(second.claimed, endpoints[0])).toBe(1);
    const ids = [...first.claimed, ...second.claimed].map((row) => row.id);
    // Each with what its message needs: the endpoint's address and secret, and the event as the feed has it.
    expect(first.claimed[0]).toMatchObject({ url: expect.stringMatching(/^https:\/\/example.com\//), secret: 'whsec_x', previousSecret: null, retryStep: 0 });
    expect(first.claimed[0].event).toEqual({
      id: expect.any(String),
      source: 'acme-erp',
      documentId: expect.any(String),
      type: 'document.created',
      status: 'PENDING_PAYMENT',
      previousStatus: null,
      createdAt: expect.any(Date),
      traceParent: null,
    });
    expect(new Set(ids).size).toBe(ids.length);

    // Released leases are due again at once; another instance's are not touched.
    await claims.release(
      first.claimed.map((row) => row.id),
      'two',
    );
    expect((await check.query(`SELECT count(*)::int AS n FROM outbound_deliveries WHERE leased_by = 'one'`)).rows[0].n).toBe(first.claimed.length);
    await claims.release(
      first.claimed.map((row) => row.id),
      'one',
    );
    expect((await check.query(`SELECT count(*)::int AS n FROM outbound_deliveries WHERE leased_by = 'one'`)).rows[0].n).toBe(0);
  });

  it('holds back, while asked to, deliveries due for less than the given age, and says so', async () => {
    await check.query('UPDATE outbound_deliveries SET lease_expires_at = NULL, leased_by = NULL, next_attempt_at = now()');
    const young = await claims.claim(request('three', { minAgeSeconds: 60 }));
    expect(young).toEqual({ claimed: [], heldBack: true });
    expect((await claims.due()).depth).toBe(20);
  });

  it('records an attempt only under the instance\u2019s own lease, and retries on the schedule', async () => {
    await check.query('UPDATE outbound_deliveries SET lease_expires_at = NULL, leased_by = NULL');
    const { claimed } = await claims.claim(request('four', { limit: 2, perEndpoint: 1 }));
    expect(claimed).toHaveLength(2);
    const record = (deliveryId: string, status: 'pending' | 'succeeded') => ({
      deliveryId,
      outcome: status === 'pending' ? 'retrying' : 'succeeded',
      status,
      delaySeconds: status === 'pending' ? 30 : null,
      attemptedAt: new Date(),
      responseStatus: status === 'pending' ? 500 : 204,
      error: status === 'pending' ? 'http_error' : null,
      durationMs: 5,
      responseExcerpt: null,
    });
    await claims.record([record(claimed[0].id, 'succeeded'), record(claimed[1].id, 'pending')], 'someone-else');
    expect((await check.query(`SELECT count(*)::int AS n FROM outbound_delivery_attempts`)).rows[0].n).toBe(0);
    await claims.record([record(claimed[0].id, 'succeeded'), record(claimed[1].id, 'pending')], 'four');
    const { rows } = await check.query(
      `SELECT id, status, attempts, retry_step, leased_by, next_attempt_at > now() + interval '20 seconds' AS later FROM outbound_deliveries WHERE id = ANY ($1) ORDER BY id`,
      [claimed.map((row) => row.id)],
    );
    expect(rows.map(({ status, attempts, retry_step, leased_by }) => ({ status, attempts, retry_step, leased_by }))).toEqual(
      expect.arrayContaining([
        { status: 'succeeded', attempts: 1, retry_step: 0, leased_by: null },
        { status: 'pending', attempts: 1, retry_step: 1, leased_by: null },
      ]),
    );
  });
});

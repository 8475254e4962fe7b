import { DeliveryClaimsRepository } from '../../src/outbound-webhooks/delivery-claims.repository.js';
import { DeliveryRecorder, RecordedAttempt } from '../../src/outbound-webhooks/delivery-recorder.js';
import type { AttemptResult } from '../../src/outbound-webhooks/delivery-sender.js';
import { documentBody, IssuedKey, newIdempotencyKey, newSourceWithKey, postDocument } from '../support/factories.js';
import { startTestApp, TestApp } from '../support/test-app.js';

/**
 * The recorder writes many finished attempts in one statement. Its deliveries are claimed here by hand
 * (leased by `recorder-test`, far in the future), so the app's own worker leaves them alone and each
 * batch holds exactly the outcomes the test chooses, in the order it chooses.
 */
describe('recording push delivery attempts in batches', () => {
  const INSTANCE = 'recorder-test';
  let t: TestApp;
  let recorder: DeliveryRecorder;
  const recorded: RecordedAttempt[][] = [];

  const answer = (status: number | null, error: AttemptResult['error'] = null): AttemptResult => ({
    ok: status !== null && status < 300,
    status,
    error: error ?? (status !== null && status >= 300 ? 'http_error' : null),
    retryAfterSeconds: null,
    excerpt: status === null ? null : `answer ${status}`,
    durationMs: 7,
  });

  /** An endpoint with `count` deliveries leased by `leasedBy`, which the app's worker will not touch. */
  const leasedDeliveries = async (count: number, leasedBy = INSTANCE) => {
    const source: IssuedKey = await newSourceWithKey(t.app);
    for (let i = 0; i < count; i += 1) expect((await postDocument(t.app, source.key, documentBody(source.source))).statusCode).toBe(201);
    // Registered after the documents, so the trigger wrote no delivery of its own.
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhook-endpoints',
      headers: { 'x-api-key': source.key, 'x-idempotency-key': newIdempotencyKey() },
      payload: { url: 'http://127.0.0.1:1/never-called', eventTypes: ['document.created'] },
    });
    expect(res.statusCode).toBe(201);
    const endpointId = res.json().id as string;
    const { rows } = await t.db.query(
      `INSERT INTO outbound_deliveries (endpoint_id, event_id, source, event_type, lease_expires_at, leased_by)
       SELECT $1, e.id, e.source, e.type, now() + interval '1 hour', $3 FROM document_events e WHERE e.source = $2 ORDER BY e.id
       RETURNING id`,
      [endpointId, source.source, leasedBy],
    );
    return { endpointId, ids: rows.map((row: { id: string }) => row.id) };
  };
  const attempt = (deliveryId: string, outcome: RecordedAttempt['outcome'], result: AttemptResult, at: number, delaySeconds: number | null = null) => ({
    deliveryId,
    outcome,
    result,
    attemptedAt: new Date(Date.now() - 60_000 + at * 1000),
    delaySeconds,
  });
  const delivery = async (id: string) =>
    (
      await t.db.query(
        'SELECT status, attempts, retry_step, leased_by, last_response_status, last_error, next_attempt_at FROM outbound_deliveries WHERE id = $1',
        [id],
      )
    ).rows[0];
  const attemptsOf = async (id: string) =>
    (await t.db.query('SELECT response_status, error, duration_ms, response_excerpt FROM outbound_delivery_attempts WHERE delivery_id = $1 ORDER BY id', [id]))
      .rows;
  const endpoint = async (id: string) =>
    (await t.db.query('SELECT enabled, disabled_reason, failing_since FROM webhook_endpoints WHERE id = $1', [id])).rows[0];

  beforeAll(async () => {
    t = await startTestApp({ env: { OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    recorder = new DeliveryRecorder(t.app.get(DeliveryClaimsRepository), INSTANCE, (batch) => recorded.push(batch));
  });
  afterAll(() => t.close());

  it('records a batch partly succeeding and partly failing, each delivery with its own outcome, in one write', async () => {
    const { endpointId, ids } = await leasedDeliveries(4);
    const [succeeded, retrying, failed, gone] = ids;
    const batch = [
      attempt(failed, 'failed', answer(null, 'timeout'), 1),
      attempt(succeeded, 'succeeded', answer(204), 2),
      attempt(retrying, 'retrying', answer(500), 3, 30),
    ];
    for (const a of batch) recorder.add(a);
    const flushing = Date.now();
    await recorder.flush();
    const flushed = Date.now();

    expect(recorded.at(-1)).toEqual(batch);
    expect(await delivery(succeeded)).toMatchObject({
      status: 'succeeded',
      attempts: 1,
      retry_step: 0,
      leased_by: null,
      last_response_status: 204,
      last_error: null,
      next_attempt_at: null,
    });
    expect(await delivery(retrying)).toMatchObject({
      status: 'pending',
      attempts: 1,
      retry_step: 1,
      leased_by: null,
      last_response_status: 500,
      last_error: 'http_error',
    });
    // Its delay from the write: the write's time lies between the two readings, however long it took.
    const nextAttemptAt = ((await delivery(retrying)).next_attempt_at as Date).getTime();
    expect(nextAttemptAt - flushing).toBeGreaterThanOrEqual(30_000);
    expect(nextAttemptAt - flushed).toBeLessThanOrEqual(30_000);
    expect(await delivery(failed)).toMatchObject({
      status: 'failed',
      attempts: 1,
      leased_by: null,
      last_response_status: null,
      last_error: 'timeout',
      next_attempt_at: null,
    });
    expect(await attemptsOf(succeeded)).toEqual([{ response_status: 204, error: null, duration_ms: 7, response_excerpt: 'answer 204' }]);
    expect(await attemptsOf(retrying)).toEqual([{ response_status: 500, error: 'http_error', duration_ms: 7, response_excerpt: 'answer 500' }]);
    expect(await attemptsOf(failed)).toEqual([{ response_status: null, error: 'timeout', duration_ms: 7, response_excerpt: null }]);
    expect(await delivery(gone)).toMatchObject({ status: 'pending', attempts: 0, leased_by: INSTANCE });
    // The failure after the last success starts the endpoint's failing streak; the one before it does not count.
    const health = await endpoint(endpointId);
    expect(health).toMatchObject({ enabled: true, disabled_reason: null });
    expect((health.failing_since as Date).getTime()).toBe(batch[2].attemptedAt.getTime());

    // A success after the failures clears the streak; a 410 in the same batch disables the endpoint.
    recorder.add(attempt(gone, 'gone', answer(410), 10));
    await recorder.flush();
    expect(await delivery(gone)).toMatchObject({ status: 'failed', attempts: 1, last_response_status: 410 });
    expect(await endpoint(endpointId)).toMatchObject({ enabled: false, disabled_reason: 'gone' });
  });

  it('clears the failing streak when the last attempt of a batch succeeded, and disables an endpoint failing for 5 days', async () => {
    const clearing = await leasedDeliveries(2);
    await t.db.query(`UPDATE webhook_endpoints SET failing_since = now() - interval '2 days' WHERE id = $1`, [clearing.endpointId]);
    recorder.add(attempt(clearing.ids[0], 'retrying', answer(503), 1, 30));
    recorder.add(attempt(clearing.ids[1], 'succeeded', answer(200), 2));
    await recorder.flush();
    expect(await endpoint(clearing.endpointId)).toEqual({ enabled: true, disabled_reason: null, failing_since: null });

    const stale = await leasedDeliveries(1);
    await t.db.query(`UPDATE webhook_endpoints SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`, [stale.endpointId]);
    recorder.add(attempt(stale.ids[0], 'retrying', answer(500), 1, 30));
    await recorder.flush();
    expect(await endpoint(stale.endpointId)).toMatchObject({ enabled: false, disabled_reason: 'failing' });
  });

  it('records nothing for a delivery whose lease another instance holds now, and still records the rest of the batch', async () => {
    const taken = await leasedDeliveries(1, 'another-instance');
    const mine = await leasedDeliveries(1);
    recorder.add(attempt(taken.ids[0], 'succeeded', answer(204), 1));
    recorder.add(attempt(mine.ids[0], 'succeeded', answer(204), 2));
    await recorder.flush();
    expect(await delivery(taken.ids[0])).toMatchObject({ status: 'pending', attempts: 0, leased_by: 'another-instance' });
    expect(await attemptsOf(taken.ids[0])).toEqual([]);
    expect(await delivery(mine.ids[0])).toMatchObject({ status: 'succeeded', attempts: 1, leased_by: null });
  });
});

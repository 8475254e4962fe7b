import { documentBody, newIdempotencyKey, newSourceWithKey, postDocument, sendWebhook, signedWebhook } from '../support/factories.js';
import { waitFor } from '../support/processes.js';
import { startTestApp, TestApp, TEST_WEBHOOK_SECRET } from '../support/test-app.js';

describe('pooled connections after a burst of requests', () => {
  let t: TestApp;

  beforeAll(async () => (t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '100000' } })));
  afterAll(() => t.close());

  it('leaves no connection inside a transaction after a burst of creates, replays, conflicts, refusals and bank events', async () => {
    const { key, source } = await newSourceWithKey(t.app);
    const shared = newIdempotencyKey();
    const body = documentBody(source, { providerReference: `PAY-CLEAN-${Date.now()}` });
    const statuses = await Promise.all([
      // One key sent ten times at once: one create, the rest replays or "in use".
      ...Array.from({ length: 10 }, () => postDocument(t.app, key, body, shared)),
      ...Array.from({ length: 20 }, (_, i) =>
        postDocument(t.app, key, documentBody(source, i % 2 ? {} : { providerReference: `PAY-CLEAN-${i}-${Date.now()}` })),
      ),
      ...Array.from({ length: 10 }, () => postDocument(t.app, key, documentBody(source, { totalAmount: 'many' }))),
      ...Array.from({ length: 10 }, (_, i) =>
        sendWebhook(
          t.app,
          signedWebhook(TEST_WEBHOOK_SECRET, {
            eventId: `evt-clean-${i % 5}`,
            eventType: 'PAYMENT_STATUS',
            status: 'PAID',
            providerReference: body.providerReference,
          }),
        ),
      ),
    ]).then((responses) => responses.map((res) => res.statusCode));
    expect(statuses.filter((code) => ![200, 201, 409, 422].includes(code))).toEqual([]);
    expect(statuses.filter((code) => code === 422)).toHaveLength(10);

    // Every request has been answered: none of the gateway's connections may stay inside a transaction. The
    // sealer and the push worker open short ones of their own off the request path, so a transaction seen once
    // may be theirs and about to end; a connection a request left behind stays, and the wait then runs out.
    const database = new URL(t.databaseUrl).pathname.slice(1);
    const settled = await waitFor(
      async () => {
        const states = await t.db.query<{ state: string }>(
          'SELECT state FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND state IS NOT NULL',
          [database],
        );
        return states.rows.some(({ state }) => state.startsWith('idle in transaction')) ? undefined : states.rows;
      },
      'no connection idle in a transaction',
      60_000,
    );
    expect(settled.length).toBeGreaterThan(0);
  });
});

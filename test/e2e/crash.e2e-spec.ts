import { Client } from 'pg';
import { freePort } from '../../src/database/embedded-postgres.js';
import { createTestDatabase, dropTestDatabase } from '../support/database.js';
import { documentBody, newIdempotencyKey, signedWebhook } from '../support/factories.js';
import { Spawned, startGateway, waitFor } from '../support/processes.js';
import { TEST_ADMIN_TOKEN, TEST_WEBHOOK_SECRET } from '../support/test-app.js';

interface Attempt {
  key: string;
  body: Record<string, unknown>;
  status?: number;
  id?: string;
}

describe('a gateway killed with SIGKILL while requests are in flight', () => {
  let databaseUrl: string;
  let port: number;
  let gateway: Spawned | undefined;
  let db: Client;

  const base = () => `http://127.0.0.1:${port}`;
  const launch = async () => {
    gateway = startGateway({
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      BANK_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
      LOG_LEVEL: 'warn',
      DB_POOL_SIZE: '30',
    });
    await waitFor(async () => (await fetch(`${base()}/health/ready`)).ok, 'gateway');
  };
  const post = (apiKey: string, attempt: Attempt) =>
    fetch(`${base()}/api/v1/documents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'x-idempotency-key': attempt.key },
      body: JSON.stringify(attempt.body),
    });
  /** Retries as a client would: again after Retry-After while the key is still in use. */
  const retry = async (apiKey: string, attempt: Attempt) => {
    for (;;) {
      const res = await post(apiKey, attempt);
      if (res.status !== 409) return { status: res.status, replayed: res.headers.get('idempotent-replayed'), body: (await res.json()) as { id: string } };
      await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after') ?? 1) * 1000));
    }
  };

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    port = await freePort();
    db = new Client({ connectionString: databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    if (gateway?.child.exitCode === null) gateway.child.kill('SIGKILL');
    await db.end();
    await dropTestDatabase(databaseUrl);
  });

  it('leaves every document exactly once, and every retry gets one consistent answer', async () => {
    await launch();
    const issued = (await (
      await fetch(`${base()}/admin/api-keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TEST_ADMIN_TOKEN}` },
        body: JSON.stringify({ source: 'crash-test' }),
      })
    ).json()) as { key: string };
    const attempts: Attempt[] = Array.from({ length: 40 }, () => ({ key: newIdempotencyKey(), body: documentBody('crash-test') }));

    // The first half completes before the crash.
    for (const attempt of attempts.slice(0, 20)) {
      const res = await post(issued.key, attempt);
      attempt.status = res.status;
      attempt.id = ((await res.json()) as { id: string }).id;
    }
    expect(attempts.slice(0, 20).every((a) => a.status === 201)).toBe(true);

    // The second half is held inside its transactions (claims taken, the documents table locked against
    // inserts), then the process dies.
    await db.query('BEGIN');
    await db.query('LOCK TABLE documents IN SHARE MODE');
    const inFlight = attempts.slice(20).map((attempt) =>
      post(issued.key, attempt).then(
        (r) => r.status,
        () => 'connection lost',
      ),
    );
    await waitFor(async () => {
      const { rows } = await db.query(`SELECT count(*) FROM pg_locks WHERE relation = 'documents'::regclass AND NOT granted`);
      return Number(rows[0].count) === 20;
    }, 'requests blocked in flight');
    gateway!.child.kill('SIGKILL');
    expect(await gateway!.exited).toBe('SIGKILL');
    expect(new Set(await Promise.all(inFlight))).toEqual(new Set(['connection lost']));
    await db.query('ROLLBACK');

    await launch();
    const answers: Array<{ status: number; replayed: string | null; body: { id: string } }> = [];
    for (const attempt of attempts) answers.push(await retry(issued.key, attempt));
    attempts.forEach((attempt, i) => {
      expect(answers[i].status).toBe(201);
      if (attempt.id) {
        // Completed before the crash: the retry is the stored answer.
        expect(answers[i].replayed).toBe('true');
        expect(answers[i].body.id).toBe(attempt.id);
      }
    });
    const { rows } = await db.query(`SELECT external_id, count(*)::int AS n FROM documents WHERE source = 'crash-test' GROUP BY 1`);
    expect(rows).toHaveLength(40);
    expect(rows.every((r: { n: number }) => r.n === 1)).toBe(true);
    const records = await db.query(`SELECT count(*)::int AS n FROM idempotency_records WHERE source = 'crash-test'`);
    expect(records.rows[0].n).toBe(40);

    // And the answer stays the same from now on.
    for (const [i, attempt] of attempts.entries()) {
      const again = await retry(issued.key, attempt);
      expect([again.status, again.replayed, again.body.id]).toEqual([201, 'true', answers[i].body.id]);
    }
    gateway!.child.kill('SIGTERM');
    expect(await gateway!.exited).toBe(0);
  }, 300_000);

  it('keeps every webhook event it acknowledged with 200', async () => {
    await launch();
    const events = Array.from({ length: 10 }, (_, i) => ({
      eventId: `evt-crash-${i}-${newIdempotencyKey()}`,
      eventType: 'PAYMENT_STATUS',
      status: 'PAID',
      providerReference: `PAY-CRASH-${i}`,
    }));
    const acknowledged: string[] = [];
    for (const event of events) {
      const delivery = signedWebhook(TEST_WEBHOOK_SECRET, event);
      const res = await fetch(`${base()}/api/webhooks/payments/bank`, { method: 'POST', headers: delivery.headers, body: delivery.raw });
      expect(res.status).toBe(200);
      acknowledged.push(event.eventId);
    }
    gateway!.child.kill('SIGKILL');
    expect(await gateway!.exited).toBe('SIGKILL');

    await launch();
    const res = await fetch(`${base()}/admin/webhook-events?status=unmatched&limit=200`, { headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } });
    const kept = ((await res.json()) as { data: Array<{ eventId: string }> }).data.map((e) => e.eventId);
    expect(kept).toEqual(expect.arrayContaining(acknowledged));
    gateway!.child.kill('SIGTERM');
    expect(await gateway!.exited).toBe(0);
  }, 300_000);
});

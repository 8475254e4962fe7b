import { Client } from 'pg';
import { sql } from '../../src/database/sql';
import { ClaimArguments, IdempotencyRepository } from '../../src/idempotency/idempotency.repository';
import { TRANSACTION_TIME } from '../../src/idempotency/idempotent-operation';
import { mediumDatabase, MediumDatabase } from '../support/medium';

const MARKER = JSON.stringify(TRANSACTION_TIME);
const claimOf = (key: string, answer = { status: 201, body: '{"id":"x"}', location: '/x' as string | null }, ttl = 86400): ClaimArguments => [
  'acme-erp',
  key,
  'f'.repeat(64),
  ttl,
  answer.status,
  answer.body,
  answer.location,
  MARKER,
];

describe('IdempotencyRepository and idempotency_claim_or_find()', () => {
  let m: MediumDatabase;
  let records: IdempotencyRepository;
  let check: Client;
  let n = 0;
  const key = () => `key-${++n}-${Date.now()}`;

  beforeAll(async () => {
    m = await mediumDatabase();
    records = new IdempotencyRepository(m.db);
    check = new Client({ connectionString: m.url });
    await check.connect();
  });
  afterAll(async () => {
    await check.end();
    await m.close();
  });

  it('stores the answer with the transaction\u2019s time where the marker stood, and finds it once committed', async () => {
    const k = key();
    const claim = await m.db.transaction((tx) => records.claim(tx, claimOf(k, { status: 201, body: `{"createdAt":${MARKER},"n":1}`, location: '/d/1' })));
    const stored = claim.claimed ? claim.answer : 'not claimed';
    expect(stored).toMatch(/^\{"createdAt":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z","n":1\}$/);
    const { rows } = await check.query(`SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at FROM idempotency_records WHERE idempotency_key = $1`, [k]);
    expect(stored).toContain(rows[0].at);
    expect(await records.find(m.db, 'acme-erp', k)).toEqual({ fingerprint: 'f'.repeat(64), status: 201, body: stored, location: '/d/1' });
    expect(await records.find(m.db, 'other-source', k)).toBeNull();
  });

  it('does not claim a key another transaction holds (in use), nor one with a live record, whose answer it returns; a claim that rolls back leaves nothing', async () => {
    const k = key();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const first = m.db.transaction(async (tx) => {
      const answer = await records.claim(tx, claimOf(k));
      await held;
      return answer;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await records.inUse('acme-erp', k)).toBe(true);
    expect(await m.db.transaction((tx) => records.claim(tx, claimOf(k)))).toEqual({ claimed: false, stored: null });
    release();
    expect(await first).toEqual({ claimed: true, answer: '{"id":"x"}' });
    expect(await records.inUse('acme-erp', k)).toBe(false);
    const another: ClaimArguments = ['acme-erp', k, 'e'.repeat(64), 86400, 500, 'another answer', null, MARKER];
    expect(await m.db.transaction((tx) => records.claim(tx, another))).toEqual({
      claimed: false,
      stored: { fingerprint: 'f'.repeat(64), status: 201, body: '{"id":"x"}', location: '/x' },
    });

    const rolledBack = key();
    await expect(
      m.db.transaction(async (tx) => {
        await records.claim(tx, claimOf(rolledBack));
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await records.find(m.db, 'acme-erp', rolledBack)).toBeNull();
    expect(await m.db.transaction((tx) => records.claim(tx, claimOf(rolledBack)))).toMatchObject({ claimed: true });
  });

  it('finds a live answer without writing: no transaction id, no lock on the key or on the record', async () => {
    const k = key();
    await m.db.transaction((tx) => records.claim(tx, claimOf(k)));
    const seen = await m.db.transaction(async (tx) => {
      const claim = await records.claim(tx, claimOf(k));
      const [state] = await tx.query<{ xid: string | null; locks: number }>(
        sql('test-claim-footprint', `SELECT txid_current_if_assigned()::text AS xid, (SELECT count(*)::int FROM pg_locks WHERE pid = pg_backend_pid() AND locktype IN ('advisory', 'transactionid')) AS locks`),
        [],
      );
      return { claim, state };
    });
    expect(seen.claim).toMatchObject({ claimed: false, stored: { status: 201, body: '{"id":"x"}' } });
    expect(seen.state).toEqual({ xid: null, locks: 0 });
  });

  it('takes over an expired record, and stores the general way\u2019s answer over its placeholder', async () => {
    const k = key();
    await m.db.transaction((tx) => records.claim(tx, claimOf(k)));
    await check.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, [k]);
    expect(await records.find(m.db, 'acme-erp', k)).toBeNull();
    await m.db.transaction(async (tx) => {
      expect(await records.claim(tx, claimOf(k, { status: 0, body: '', location: null }))).toEqual({ claimed: true, answer: '' });
      await records.store(tx, 'acme-erp', k, { status: 409, body: '{"code":"DUPLICATE_DOCUMENT"}', location: null });
    });
    expect(await records.find(m.db, 'acme-erp', k)).toMatchObject({ status: 409, body: '{"code":"DUPLICATE_DOCUMENT"}', location: null });
  });

  it('purges expired records in batches, and only those', async () => {
    const live = key();
    const expired = [key(), key(), key()];
    for (const k of [live, ...expired]) await m.db.transaction((tx) => records.claim(tx, claimOf(k)));
    await check.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = ANY ($1)`, [expired]);
    expect(await records.purgeExpired(2)).toBe(2);
    expect(await records.purgeExpired(2)).toBe(1);
    expect(await records.purgeExpired(2)).toBe(0);
    expect(await records.find(m.db, 'acme-erp', live)).not.toBeNull();
  });
});

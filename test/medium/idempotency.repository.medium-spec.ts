import { DataSource, QueryRunner } from 'typeorm';
import { IdempotencyRecordEntity } from '../../src/idempotency/idempotency-record.entity.js';
import { IdempotencyRepository, NewRecord } from '../../src/idempotency/idempotency.repository.js';
import { mediumModule, Medium } from '../support/medium.js';

describe('IdempotencyRepository and idempotency_begin()', () => {
  let m: Medium;
  let records: IdempotencyRepository;
  let dataSource: DataSource;
  let n = 0;
  const key = () => `key-${++n}-${Date.now()}`;
  const answer = (k: string, overrides: Partial<NewRecord> = {}): NewRecord => ({
    idempotencyKey: k,
    source: 'acme-erp',
    fingerprint: 'f'.repeat(64),
    responseStatus: 201,
    responseBody: '{"id":"x"}',
    responseLocation: '/x',
    ...overrides,
  });
  /** A request's transaction, as IdempotencyService opens it. */
  const open = async (): Promise<QueryRunner> => {
    const runner = dataSource.createQueryRunner();
    await runner.startTransaction();
    return runner;
  };
  const end = async (runner: QueryRunner) => {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    await runner.release();
  };
  /** Claims `k` and stores `stored` for it, as a request that finishes does. */
  const finished = async (k: string, stored = answer(k)) => {
    const runner = await open();
    expect(await records.claim(runner.manager, 'acme-erp', k)).toEqual({ held: true, record: null });
    await records.storeAndCommit(runner, stored, 86400);
    await end(runner);
  };

  beforeAll(async () => {
    m = await mediumModule({ entities: [IdempotencyRecordEntity], providers: [IdempotencyRepository] });
    records = m.moduleRef.get(IdempotencyRepository);
    dataSource = m.dataSource;
  });
  afterAll(() => m.close());

  it('claims a free key, stores the answer with the commit, and then answers with it, for that source only', async () => {
    const k = key();
    await finished(k);
    const runner = await open();
    expect(await records.claim(runner.manager, 'acme-erp', k)).toEqual({
      held: false,
      record: { fingerprint: 'f'.repeat(64), responseStatus: 201, responseBody: '{"id":"x"}', responseLocation: '/x' },
    });
    expect(await records.claim(runner.manager, 'other-source', k)).toEqual({ held: true, record: null });
    await end(runner);
    const { rows } = await m.check.query(`SELECT (expires_at - created_at)::text AS lifetime FROM idempotency_records WHERE idempotency_key = $1`, [k]);
    expect(rows).toEqual([{ lifetime: '1 day' }]);
  });

  it('does not give a key another transaction holds (in use); once that one rolls back, the key is free again', async () => {
    const k = key();
    const first = await open();
    expect(await records.claim(first.manager, 'acme-erp', k)).toEqual({ held: true, record: null });
    const second = await open();
    expect(await records.claim(second.manager, 'acme-erp', k)).toEqual({ held: false, record: null });
    await end(second);
    await end(first);
    const third = await open();
    expect(await records.claim(third.manager, 'acme-erp', k)).toEqual({ held: true, record: null });
    await end(third);
    expect(await m.check.query(`SELECT 1 FROM idempotency_records WHERE idempotency_key = $1`, [k])).toMatchObject({ rowCount: 0 });
  });

  it('finds a live answer without writing: no transaction id, no lock', async () => {
    const k = key();
    await finished(k);
    const runner = await open();
    try {
      expect(await records.claim(runner.manager, 'acme-erp', k)).toMatchObject({ record: { responseStatus: 201 } });
      const [state] = await runner.query(
        `SELECT txid_current_if_assigned()::text AS xid, (SELECT count(*)::int FROM pg_locks WHERE pid = pg_backend_pid() AND locktype IN ('advisory', 'transactionid')) AS locks`,
      );
      expect(state).toEqual({ xid: null, locks: 0 });
    } finally {
      await end(runner);
    }
  });

  it('takes over an expired record, and leaves nothing when the request rolls back', async () => {
    const k = key();
    await finished(k);
    await m.check.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, [k]);
    await finished(k, answer(k, { responseStatus: 409, responseBody: '{"code":"DUPLICATE_DOCUMENT"}', responseLocation: null }));
    const runner = await open();
    expect(await records.claim(runner.manager, 'acme-erp', k)).toMatchObject({ record: { responseStatus: 409, responseLocation: null } });
    await end(runner);

    const rolledBack = key();
    const abandoned = await open();
    await records.claim(abandoned.manager, 'acme-erp', rolledBack);
    await end(abandoned);
    expect(await m.check.query(`SELECT 1 FROM idempotency_records WHERE idempotency_key = $1`, [rolledBack])).toMatchObject({ rowCount: 0 });
  });

  it('purges expired records in batches, and only those', async () => {
    const live = key();
    const expired = [key(), key(), key()];
    for (const k of [live, ...expired]) await finished(k);
    await m.check.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = ANY ($1)`, [expired]);
    expect(await records.purgeExpired(2)).toBe(2);
    expect(await records.purgeExpired(2)).toBe(1);
    expect(await records.purgeExpired(2)).toBe(0);
    expect(await m.check.query(`SELECT 1 FROM idempotency_records WHERE idempotency_key = $1`, [live])).toMatchObject({ rowCount: 1 });
  });
});

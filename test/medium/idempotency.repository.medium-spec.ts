import { jest } from '@jest/globals';
import { Client, QueryConfig } from 'pg';
import { AppConfig } from '../../src/config/app-config.js';
import { PreparedStatement } from '../../src/database/prepared-statement.js';
import { Transaction } from '../../src/database/transaction.js';
import { IdempotencyRecordEntity } from '../../src/idempotency/idempotency-record.entity.js';
import { IdempotencyRepository } from '../../src/idempotency/idempotency.repository.js';
import { AnsweredBefore, Answer, IdempotencyService, IdempotentCall, Looked } from '../../src/idempotency/idempotency.service.js';
import { mediumModule, Medium } from '../support/medium.js';

/** A write of the route that PostgreSQL refuses (a NOT NULL column left null). */
const REFUSED_WRITE = new PreparedStatement('test-refused-write', 'INSERT INTO idempotency_records (idempotency_key, source) VALUES ($1, NULL)');
/** A write of the route that succeeds, in a table of the test's own. */
const ROUTE_WRITE = new PreparedStatement('test-route-write', 'INSERT INTO route_writes (label) VALUES ($1)');

/** The names of the statements `work` sends through pg's Client#query (the test's own connection unused meanwhile). */
async function statementsOf(work: () => Promise<unknown>): Promise<string[]> {
  const names: string[] = [];
  const original = Client.prototype.query;
  const spy = jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
    const config = args[0] as string | QueryConfig;
    names.push((typeof config === 'string' ? undefined : config.name) ?? (typeof config === 'string' ? config : config.text).trim().split(/\s+/)[0]);
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  });
  try {
    await work();
  } finally {
    spy.mockRestore();
  }
  return names;
}

describe('IdempotencyRepository, through IdempotencyService: the look-up, the claim, the stored answer', () => {
  let m: Medium;
  let service: IdempotencyService;
  let records: IdempotencyRepository;
  let config: AppConfig;
  let n = 0;
  const call = (overrides: Partial<IdempotentCall> = {}): IdempotentCall => ({
    source: 'acme-erp',
    key: `key-${++n}-${Date.now()}`,
    fingerprint: 'f'.repeat(64),
    instance: '/api/v1/documents',
    requestId: `req-${n}`,
    ...overrides,
  });
  const created: Answer = { status: 201, body: '{"id":"x"}', location: '/x' };
  type New = Extract<Looked, { kind: 'new' }>;
  /** The look-up as a request arrives, which must find the key new. */
  const fresh = async (c: IdempotentCall): Promise<New> => {
    const looked = await service.look(c);
    if (looked.kind !== 'new') throw new Error(`the key was answered before: ${JSON.stringify(looked)}`);
    return looked;
  };
  /** Opens the request's transaction and sends its first read: the claim (and an expired record's read behind it). */
  const claimed = async (c: IdempotentCall, looked?: New): Promise<Transaction> => {
    const tx = service.open(c, looked ?? (await fresh(c)));
    try {
      await tx.read({ reads: [] });
    } catch (error) {
      await service.abandon(tx);
      throw error;
    }
    return tx;
  };
  /** A request that looks, claims the key and finishes with `answer`. */
  const finished = async (c: IdempotentCall, answer: Answer = created) => {
    const looked = await fresh(c);
    await service.finish(await claimed(c, looked), c, looked, answer);
  };
  const routeWrites = async () => (await m.check.query('SELECT label FROM route_writes ORDER BY label')).rows.map((row) => row.label);
  const rowsOf = async (c: IdempotentCall) =>
    (
      await m.check.query(
        `SELECT response_status, (expires_at - created_at)::text AS lifetime FROM idempotency_records WHERE idempotency_key = $1 AND source = $2`,
        [c.key, c.source],
      )
    ).rows;
  /** Whether the key's claim is free, as an instance of the release before takes it (the same 64-bit key). */
  const claimFree = async (c: IdempotentCall) => {
    const { rows } = await m.check.query(`SELECT pg_try_advisory_lock(hashtextextended($1::varchar || ' ' || $2::varchar, 7340218)) AS free`, [
      c.source,
      c.key,
    ]);
    if (rows[0].free) await m.check.query(`SELECT pg_advisory_unlock(hashtextextended($1::varchar || ' ' || $2::varchar, 7340218))`, [c.source, c.key]);
    return rows[0].free as boolean;
  };

  beforeAll(async () => {
    m = await mediumModule({ entities: [IdempotencyRecordEntity], providers: [IdempotencyRepository, IdempotencyService] });
    service = m.moduleRef.get(IdempotencyService);
    records = m.moduleRef.get(IdempotencyRepository);
    config = m.moduleRef.get(AppConfig);
    await m.check.query('CREATE TABLE route_writes (label text NOT NULL)');
  });
  afterAll(() => m.close());

  it('claims a free key, writes the stored answer only with the commit (with the route\u2019s writes), and then answers with it, for that source only', async () => {
    const c = call();
    const looked = await service.look(c);
    expect(looked).toEqual({ kind: 'new', expired: false });
    const tx = await claimed(c, looked as New);
    expect(await claimFree(c)).toBe(false);
    tx.write(ROUTE_WRITE.with(c.key));
    expect(await rowsOf(c)).toEqual([]);
    const statements = await statementsOf(() => service.finish(tx, c, looked as New, created));
    expect(statements).toEqual(['writes:test-route-write+idempotency-store', 'COMMIT']);
    expect(await claimFree(c)).toBe(true);
    expect(await routeWrites()).toContain(c.key);
    expect(await service.look(c)).toEqual({ kind: 'replay', answer: { status: 201, body: '{"id":"x"}', location: '/x' } });
    expect(await records.find(c.source, c.key)).toEqual({
      fingerprint: c.fingerprint,
      responseStatus: 201,
      responseBody: '{"id":"x"}',
      responseLocation: '/x',
      live: true,
    });
    expect(await service.look({ ...c, source: 'other-source' })).toEqual({ kind: 'new', expired: false });
    expect(config.IDEMPOTENCY_TTL_SECONDS).toBe(86400);
    expect(await rowsOf(c)).toEqual([{ response_status: 201, lifetime: '1 day' }]);
  });

  it('stores no answer when the route\u2019s writes fail at the commit, and leaves the key free', async () => {
    const c = call();
    const looked = await fresh(c);
    const tx = await claimed(c, looked);
    tx.write(ROUTE_WRITE.with(`${c.key}-kept out`), REFUSED_WRITE.with(`${c.key}-route`));
    await expect(service.finish(tx, c, looked, created)).rejects.toMatchObject({ code: '23502' });
    expect(await rowsOf(c)).toEqual([]);
    expect(await routeWrites()).not.toContain(`${c.key}-kept out`);
    expect(await claimFree(c)).toBe(true);
    await finished(c);
    expect(await service.look(c)).toEqual({ kind: 'replay', answer: created });
  });

  it('refuses a key another transaction holds (409, Retry-After) without waiting; once that one ends, the key is free again', async () => {
    const c = call();
    const first = await claimed(c);
    const refusal = await claimed(c).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE', headers: { 'Retry-After': '1' } });
    // Another source's key of the same name is another claim.
    await service.abandon(await claimed({ ...c, source: 'other-source' }));
    await service.abandon(first);
    expect(await claimFree(c)).toBe(true);
    await service.abandon(await claimed(c));
    expect(await rowsOf(c)).toEqual([]);
  });

  it('commits nothing of a request whose new key another request answered between its look-up and its claim: its store is refused', async () => {
    const c = call();
    const late = await fresh(c);
    await finished(c);
    const tx = await claimed(c, late);
    tx.write(ROUTE_WRITE.with(`${c.key}-late`));
    await expect(service.finish(tx, c, late, { status: 201, body: '{"id":"late"}', location: '/late' })).rejects.toMatchObject({ code: '23505' });
    expect(await routeWrites()).not.toContain(`${c.key}-late`);
    expect(await claimFree(c)).toBe(true);
    // Looked at anew (the interceptor's second attempt), the request is a replay of the first answer.
    expect(await service.look(c)).toEqual({ kind: 'replay', answer: created });
    expect(await rowsOf(c)).toEqual([{ response_status: 201, lifetime: '1 day' }]);
  });

  it('reads an expired record again behind the claim: AnsweredBefore when another took it over since the look-up, a 422 when that was another request', async () => {
    const c = call();
    await finished(c);
    await m.check.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, [c.key]);
    const late = await service.look(c);
    expect(late).toEqual({ kind: 'new', expired: true });
    const again: Answer = { status: 201, body: '{"id":"again"}', location: '/again' };
    await finished(c, again);
    const answered = await claimed(c, late as New).catch((error: unknown) => error);
    expect(answered).toBeInstanceOf(AnsweredBefore);
    expect((answered as AnsweredBefore).answer).toEqual(again);
    expect(await claimed({ ...c, fingerprint: 'e'.repeat(64) }, late as New).catch((error: unknown) => error)).toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSED',
    });
    expect(await claimFree(c)).toBe(true);
  });

  it('looks a key up with one statement alone: no transaction, no lock, and no wait while another holds the claim', async () => {
    const c = call();
    await finished(c);
    expect(await statementsOf(() => service.look(c))).toEqual(['idempotency-record']);
    const other = call();
    const holder = await claimed(other);
    try {
      expect(await statementsOf(async () => expect(await service.look(other)).toEqual({ kind: 'new', expired: false }))).toEqual(['idempotency-record']);
      expect(await service.look({ ...c, fingerprint: 'e'.repeat(64) }).catch((error: unknown) => error)).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED' });
    } finally {
      await service.abandon(holder);
    }
  });

  it('takes over an expired record, and leaves nothing when the request rolls back', async () => {
    const c = call();
    await finished(c);
    await m.check.query(
      `UPDATE idempotency_records SET expires_at = now() - interval '1 second', created_at = now() - interval '2 days' WHERE idempotency_key = $1`,
      [c.key],
    );
    // Expired, its answer is not replayed, whoever's it was.
    expect(await service.look({ ...c, fingerprint: 'e'.repeat(64) })).toEqual({ kind: 'new', expired: true });
    const refusal: Answer = { status: 409, body: '{"code":"DUPLICATE_DOCUMENT"}', location: null };
    await finished(c, refusal);
    expect(await service.look(c)).toEqual({ kind: 'replay', answer: refusal });
    expect(await rowsOf(c)).toEqual([{ response_status: 409, lifetime: '1 day' }]);

    const rolledBack = call();
    await service.abandon(await claimed(rolledBack));
    expect(await rowsOf(rolledBack)).toEqual([]);
    expect(await claimFree(rolledBack)).toBe(true);
  });

  it('claims the key in manager() mode too, before the route works through TypeORM', async () => {
    const c = call();
    const looked = await fresh(c);
    const tx = service.open(c, looked);
    try {
      await tx.manager();
      expect(await claimFree(c)).toBe(false);
      expect(await claimed(c).catch((error: unknown) => error)).toMatchObject({ code: 'IDEMPOTENCY_KEY_IN_USE' });
      await service.finish(tx, c, looked, created);
    } finally {
      await service.abandon(tx);
    }
    expect(await service.look(c)).toEqual({ kind: 'replay', answer: created });
    // An expired record taken over by another since the look-up is found there too.
    await m.check.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, [c.key]);
    const late = await fresh(c);
    await finished(c);
    const again = service.open(c, late);
    await expect(again.manager()).rejects.toBeInstanceOf(AnsweredBefore);
    await service.abandon(again);
  });

  it('purges expired records in batches, and only those', async () => {
    const live = call();
    const expired = [call(), call(), call()];
    for (const c of [live, ...expired]) await finished(c);
    await m.check.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = ANY ($1)`, [
      expired.map((c) => c.key),
    ]);
    expect(await records.purgeExpired(2)).toBe(2);
    expect(await records.purgeExpired(2)).toBe(1);
    expect(await records.purgeExpired(2)).toBe(0);
    expect(await rowsOf(live)).toHaveLength(1);
  });
});

import { jest } from '@jest/globals';
import { Client } from 'pg';
import { DataSource, EntityManager } from 'typeorm';
import { afterCommit } from '../../src/database/after-commit.js';
import { PreparedStatement, runAndCommit, runTogether, transactionOf } from '../../src/database/prepared-statement.js';
import { mediumModule, Medium } from '../support/medium.js';
import { waitFor } from '../support/processes.js';

const INSERT_PROBE = new PreparedStatement('test-insert-probe', 'INSERT INTO tx_probe (label) VALUES ($1)');
const BACKEND_PID = new PreparedStatement<{ pid: number }>('test-backend-pid', 'SELECT pg_backend_pid() AS pid');

/** Records, per statement sent through pg's Client#query, how many answers had arrived when it was sent. */
function sendsOf(): { sends: number[]; restore: () => void } {
  const sends: number[] = [];
  let answers = 0;
  const query = Client.prototype.query;
  const spy = jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]): unknown {
    sends.push(answers);
    const result = (query as (...a: unknown[]) => Promise<unknown>).apply(this, args);
    void result.then(
      () => (answers += 1),
      () => (answers += 1),
    );
    return result;
  });
  return { sends, restore: () => spy.mockRestore() };
}

describe('the data layer: TypeORM through @nestjs/typeorm, prepared statements on its connections', () => {
  let m: Medium;
  let dataSource: DataSource;
  const labels = async () => (await m.check.query('SELECT label FROM tx_probe ORDER BY label')).rows.map((r) => r.label);

  beforeAll(async () => {
    m = await mediumModule({ config: { DB_POOL_SIZE: '10' } });
    dataSource = m.dataSource;
    await m.check.query('CREATE TABLE tx_probe (label text NOT NULL)');
  });
  beforeEach(() => m.check.query('TRUNCATE tx_probe'));
  afterAll(() => m.close());

  it('is migrated at start, and runs a prepared statement alone on a pooled connection or in a TypeORM transaction', async () => {
    expect((await m.check.query(`SELECT count(*)::int AS n FROM migrations`)).rows[0].n).toBeGreaterThan(15);
    await INSERT_PROBE.run(dataSource.manager, ['alone']);
    await expect(
      dataSource.transaction(async (tx) => {
        await INSERT_PROBE.run(tx, ['rolled back']);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    await dataSource.transaction((tx) => INSERT_PROBE.run(tx, ['committed']));
    expect(await labels()).toEqual(['alone', 'committed']);
  });

  it('sends statements together in one round trip, in order, and keeps all of a transaction out when one fails', async () => {
    const recorder = sendsOf();
    try {
      await dataSource.transaction((tx) => runTogether(tx, [INSERT_PROBE.with('one'), INSERT_PROBE.with('two'), INSERT_PROBE.with('three')]));
    } finally {
      recorder.restore();
    }
    // START TRANSACTION, then the three inserts before any answer to them, then COMMIT.
    expect(recorder.sends).toEqual([0, 1, 1, 1, 4]);
    expect(await labels()).toEqual(['one', 'three', 'two']);

    await m.check.query('TRUNCATE tx_probe');
    const failure = await dataSource
      .transaction((tx) => runTogether(tx, [INSERT_PROBE.with('before'), INSERT_PROBE.with(null), INSERT_PROBE.with('after')]))
      .catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: '23502' });
    expect(await labels()).toEqual([]);
  });

  it('commits with the last statements in one round trip, and on a failure among them commits nothing and forgets what was owed after the commit', async () => {
    const calls: string[] = [];
    const runner = dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      await INSERT_PROBE.run(runner.manager, ['first']);
      afterCommit(runner.manager, () => calls.push('committed'));
      const recorder = sendsOf();
      try {
        await runAndCommit(runner, [INSERT_PROBE.with('last')]);
      } finally {
        recorder.restore();
      }
      expect(recorder.sends).toEqual([0, 0]);
      expect(calls).toEqual(['committed']);

      await runner.startTransaction();
      await INSERT_PROBE.run(runner.manager, ['kept out']);
      afterCommit(runner.manager, () => calls.push('never'));
      await expect(runAndCommit(runner, [INSERT_PROBE.with(null)])).rejects.toMatchObject({ code: '23502' });
      expect(runner.isTransactionActive).toBe(false);
      // The connection is fine: the next transaction on it commits.
      await runner.startTransaction();
      await runAndCommit(runner, [INSERT_PROBE.with('after')]);
    } finally {
      await runner.release();
    }
    expect(calls).toEqual(['committed']);
    expect(await labels()).toEqual(['after', 'first', 'last']);
  });

  it('runs a whole transaction of known statements in one round trip, and throws the first failure with nothing kept, PostgreSQL\u2019s own at COMMIT included', async () => {
    const [inserted, [{ pid }]] = await transactionOf(dataSource.manager, [INSERT_PROBE.with('one'), BACKEND_PID.with()]);
    expect(inserted).toEqual([]);
    expect(pid).toEqual(expect.any(Number));
    await expect(transactionOf(dataSource.manager, [INSERT_PROBE.with('before'), INSERT_PROBE.with(null), INSERT_PROBE.with('after')])).rejects.toMatchObject({
      code: '23502',
    });
    await m.check.query(`CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.label = 'refused at commit' THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NULL; END $$`);
    await m.check.query(`CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON tx_probe DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit()`);
    try {
      await expect(transactionOf(dataSource.manager, [INSERT_PROBE.with('four'), INSERT_PROBE.with('refused at commit')])).rejects.toThrow('refused at commit');
    } finally {
      await m.check.query('DROP TRIGGER refuse_at_commit ON tx_probe');
    }
    expect(await labels()).toEqual(['one']);
    await Promise.all(Array.from({ length: 10 }, (_, i) => transactionOf(dataSource.manager, [INSERT_PROBE.with(`ok-${i}`)])));
    expect(await labels()).toHaveLength(11);
  });

  it('calls afterCommit listeners once committed, never after a rollback, and at once outside a transaction', async () => {
    const calls: string[] = [];
    await dataSource.transaction(async (tx) => {
      afterCommit(tx, () => calls.push('committed'));
      await INSERT_PROBE.run(tx, ['x']);
      expect(calls).toEqual([]);
    });
    await expect(
      dataSource.transaction(async (tx) => {
        afterCommit(tx, () => calls.push('rolled back'));
        await INSERT_PROBE.run(tx, [null]);
      }),
    ).rejects.toMatchObject({ code: '23502' });
    afterCommit(dataSource.manager, () => calls.push('autocommit'));
    expect(calls).toEqual(['committed', 'autocommit']);
  });

  it('runs what is owed after the commit when the transaction commits, not when a savepoint inside it is released', async () => {
    const calls: string[] = [];
    await dataSource.transaction(async (tx) => {
      afterCommit(tx, () => calls.push('outer'));
      await tx.transaction((inner) => INSERT_PROBE.run(inner, ['inner']));
      expect(calls).toEqual([]);
    });
    expect(calls).toEqual(['outer']);
  });

  it('refuses a value it cannot send before it reaches a connection, which keeps working', async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    await expect(dataSource.transaction((tx) => INSERT_PROBE.run(tx, [circular]))).rejects.toThrow(/circular/i);
    await INSERT_PROBE.run(dataSource.manager, ['after']);
    expect(await labels()).toEqual(['after']);
  });

  it('gives connections back outside any transaction, whatever the transactions did', async () => {
    await Promise.all(
      Array.from({ length: 30 }, (_, i) => {
        if (i % 3 === 0) return dataSource.transaction(async () => Promise.reject(new Error('work refused'))).catch(() => undefined);
        if (i % 3 === 1) return transactionOf(dataSource.manager, [INSERT_PROBE.with(null)]).catch(() => undefined);
        return dataSource.transaction((tx) => runTogether(tx, [INSERT_PROBE.with(`ok-${i}`), BACKEND_PID.with()]));
      }),
    );
    const states = await m.check.query<{ state: string }>(
      `SELECT state FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tax-document-gateway' AND state IS NOT NULL`,
    );
    expect(states.rows.length).toBeGreaterThan(0);
    expect(states.rows.filter(({ state }) => state !== 'idle')).toEqual([]);
  });

  it('keeps a connection after a statement PostgreSQL refused, and never reuses one whose session ended', async () => {
    const [{ pid }] = await BACKEND_PID.run(dataSource.manager);
    await expect(INSERT_PROBE.run(dataSource.manager, [null])).rejects.toMatchObject({ code: '23502' });
    const pids = new Set((await Promise.all(Array.from({ length: 4 }, () => BACKEND_PID.run(dataSource.manager)))).map(([row]) => row.pid));
    expect(pids.has(pid)).toBe(true);

    await m.check.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1', [pid]);
    for (let i = 0; i < 6; i += 1) expect((await BACKEND_PID.run(dataSource.manager).catch(() => [{ pid: -1 }]))[0].pid).not.toBe(pid);
  });

  it('closes a connection on which a statement pg counts as prepared is not, instead of giving it back', async () => {
    const runner = dataSource.createQueryRunner();
    let pid: number;
    try {
      [{ pid }] = await BACKEND_PID.run(runner.manager);
      await runner.query('DEALLOCATE "test-backend-pid"');
      await expect(BACKEND_PID.run(runner.manager)).rejects.toMatchObject({ code: '26000' });
    } finally {
      await runner.release();
    }
    await waitFor(
      async () => (await m.check.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0,
      'the connection to be closed',
    );
    for (let i = 0; i < 6; i += 1) expect((await BACKEND_PID.run(dataSource.manager))[0].pid).not.toBe(pid);
  });

  it('refuses a transaction used after it ended: its connection may serve another request by now', async () => {
    let ended: EntityManager | undefined;
    await dataSource.transaction(async (tx) => {
      ended = tx;
      await INSERT_PROBE.run(tx, ['inside']);
    });
    // As when its connection is lost mid-request (TypeORM gives it back at once): the request gets a 503.
    const refusal = { failure: 'session_ended', cause: expect.objectContaining({ message: expect.stringContaining('This transaction has ended') }) };
    await expect(INSERT_PROBE.run(ended!, ['late'])).rejects.toMatchObject(refusal);
    await expect(runTogether(ended!, [INSERT_PROBE.with('late')])).rejects.toMatchObject(refusal);
    expect(await labels()).toEqual(['inside']);
  });
});

import { jest } from '@jest/globals';
import { Socket } from 'node:net';
import { Client, QueryConfig } from 'pg';
import { DataSource } from 'typeorm';
import { DatabaseUnavailable } from '../../src/common/database-failure.js';
import { afterCommit } from '../../src/database/after-commit.js';
import { selectColumns } from '../../src/database/entity-sql.js';
import { PreparedStatement } from '../../src/database/prepared-statement.js';
import { Lock, Opening, Transaction, Transactions } from '../../src/database/transaction.js';
import { DocumentEntity } from '../../src/documents/document.entity.js';
import { mediumModule, Medium } from '../support/medium.js';
import { PoolStatistics } from '../../src/database/pool-statistics.js';
import { waitFor } from '../support/processes.js';

const INSERT_PROBE = new PreparedStatement('test-insert-probe', 'INSERT INTO tx_probe (label) VALUES ($1)');
const INSERT_OTHER = new PreparedStatement('test-insert-other', 'INSERT INTO tx_other (n, label) VALUES ($1, $2)');
const RENAME_OTHER = new PreparedStatement('test-rename-other', 'UPDATE tx_other SET label = $2 WHERE n = $1');
const INSERT_UNIQUE = new PreparedStatement('test-insert-unique', 'INSERT INTO tx_unique (label) VALUES ($1)');
const FIND_UNIQUE = new PreparedStatement<{ label: string }>('test-find-unique', 'SELECT label FROM tx_unique WHERE label = $1');
const LABELS = new PreparedStatement<{ label: string }>('test-labels', 'SELECT label FROM tx_probe ORDER BY label');
const BACKEND_PID = new PreparedStatement<{ pid: number }>('test-backend-pid', 'SELECT pg_backend_pid() AS pid');
const PROBE_LOCK = new Lock('test-probe-lock', 'pg_advisory_xact_lock(7340299, hashtext($1::text))');
const TRY_LOCK = new Lock('test-try-lock', 'pg_try_advisory_xact_lock(7340298, hashtext($1::text))');
/** The opening's locks alone (with no lock of the work's behind them). */
const OPENING_LOCKS = 'locks:test-try-lock';

/**
 * Every statement sent through pg's Client#query, by name (a prepared statement's; anything else by its
 * first word), grouped into round trips: statements sent before any answer to them arrived share one.
 * The test's own connection (m.check) must not be used meanwhile.
 */
async function roundTripsOf(work: () => Promise<unknown>): Promise<string[][]> {
  const trips: string[][] = [];
  let answered = true;
  const original = Client.prototype.query;
  const spy = jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
    const config = args[0] as string | QueryConfig;
    const text = typeof config === 'string' ? config : config.text;
    const name = (typeof config === 'string' ? undefined : config.name) ?? text.trim().split(/\s+/)[0];
    const result = (original as (...a: unknown[]) => unknown).apply(this, args);
    if (answered) trips.push([]);
    answered = false;
    trips.at(-1)!.push(name);
    const settle = () => (answered = true);
    (result as Promise<unknown>).then(settle, settle);
    return result;
  });
  try {
    await work();
  } finally {
    spy.mockRestore();
  }
  return trips;
}

/**
 * How many writes the gateway's sockets made during `work`: a write of a socket not corked leaves at once,
 * and what a corked socket buffered leaves in one write when it is uncorked (Node's net.Socket writes
 * its buffered chunks with one writev). The test's own connection (m.check) must not be used meanwhile.
 */
async function writesOf(work: () => Promise<unknown>): Promise<number> {
  let writes = 0;
  const { write, uncork } = Socket.prototype;
  const writeSpy = jest.spyOn(Socket.prototype, 'write').mockImplementation(function (this: Socket, ...args: unknown[]) {
    if (this.writableCorked === 0) writes++;
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  });
  const uncorkSpy = jest.spyOn(Socket.prototype, 'uncork').mockImplementation(function (this: Socket) {
    if (this.writableCorked === 1 && this.writableLength > 0) writes++;
    uncork.call(this);
  });
  try {
    await work();
  } finally {
    writeSpy.mockRestore();
    uncorkSpy.mockRestore();
  }
  return writes;
}

describe('the data layer: TypeORM through @nestjs/typeorm, prepared statements, and the Transaction helper', () => {
  let m: Medium;
  let dataSource: DataSource;
  let transactions: Transactions;
  const labels = async () => (await m.check.query('SELECT label FROM tx_probe ORDER BY label')).rows.map((r) => r.label);
  const others = async () => (await m.check.query('SELECT n, label FROM tx_other ORDER BY n')).rows;
  /** The application's connections that are not idle (in a transaction, or running something). */
  const busyConnections = async () =>
    (
      await m.check.query<{ state: string }>(
        `SELECT state FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tax-document-gateway' AND state IS NOT NULL AND state <> 'idle'`,
      )
    ).rows;
  const appConnections = async () =>
    (await m.check.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tax-document-gateway'`)).rowCount ?? 0;

  beforeAll(async () => {
    m = await mediumModule({ config: { DB_POOL_SIZE: '10' } });
    dataSource = m.dataSource;
    transactions = m.transactions;
    await m.check.query('CREATE TABLE tx_probe (label text NOT NULL)');
    await m.check.query('CREATE TABLE tx_other (n int PRIMARY KEY, label text NOT NULL)');
    await m.check.query('CREATE TABLE tx_unique (label text PRIMARY KEY)');
  });
  beforeEach(() => m.check.query('TRUNCATE tx_probe, tx_other, tx_unique'));
  afterAll(() => m.close());

  it('is migrated at start, runs a prepared statement alone on a pooled connection, and refuses to run one inside a transaction', async () => {
    expect((await m.check.query(`SELECT count(*)::int AS n FROM migrations`)).rows[0].n).toBeGreaterThan(15);
    expect(await INSERT_PROBE.run(dataSource.manager, ['alone'])).toEqual([]);
    // Inside a transaction its statements go through the Transaction that opened it; run() would commit by itself.
    await expect(dataSource.transaction((tx) => INSERT_PROBE.run(tx, ['inside']))).rejects.toThrow('PreparedStatement.run runs alone');
    const tx = transactions.begin();
    try {
      const manager = await tx.manager();
      await expect(INSERT_PROBE.run(manager, ['managed'])).rejects.toThrow('PreparedStatement.run runs alone');
    } finally {
      await tx.rollback();
    }
    expect(await labels()).toEqual(['alone']);
  });

  it('reads whole documents with the columns in the order the table stores them, so that such a read projects nothing', async () => {
    // PostgreSQL hands a scan's rows on as they are only when the select list is the table's columns in
    // their stored order; any other order builds and runs a projection on every execution of the read.
    const { rows } = await m.check.query<{ name: string }>(
      `SELECT attname AS name FROM pg_attribute WHERE attrelid = 'documents'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`,
    );
    // The select list the documents' reads are made of (DocumentsRepository), each `"column" AS "property"`.
    const selected = selectColumns(dataSource.getMetadata(DocumentEntity))
      .split(', ')
      .map((item) => item.split(' AS ')[0].replaceAll('"', ''));
    expect(selected).toEqual(rows.map((row) => row.name));
  });

  it('reads (BEGIN, the locks and the reads) in one round trip and writes with the COMMIT in a second, the lock held until then', async () => {
    const tx = transactions.begin();
    const read = await roundTripsOf(async () => {
      const [rows] = await tx.read({ locks: [PROBE_LOCK.with('probe')], reads: [LABELS.with()] });
      expect(rows).toEqual([]);
    });
    expect(read).toEqual([['BEGIN', 'locks:test-probe-lock', 'test-labels']]);
    // A later read is sent alone: the transaction is begun.
    expect(await roundTripsOf(() => tx.read({ reads: [LABELS.with()] }))).toEqual([['test-labels']]);
    // The lock is the transaction's until it ends.
    expect((await m.check.query(`SELECT pg_try_advisory_lock(7340299, hashtext('probe')) AS free`)).rows[0].free).toBe(false);
    tx.write(INSERT_PROBE.with('one'));
    tx.write(INSERT_PROBE.with('two'));
    expect(await labels()).toEqual([]);
    const committed = await roundTripsOf(() => tx.commit([INSERT_PROBE.with('last')]));
    expect(committed).toEqual([['writes:test-insert-probe+test-insert-probe+test-insert-probe', 'COMMIT']]);
    expect(await labels()).toEqual(['last', 'one', 'two']);
    expect((await m.check.query(`SELECT pg_try_advisory_lock(7340299, hashtext('probe')) AS free`)).rows[0].free).toBe(true);
    await m.check.query(`SELECT pg_advisory_unlock(7340299, hashtext('probe'))`);
  });

  it('sends an opening with the first read, the read\u2019s locks taken only once the opening\u2019s are granted, and lets its check decide first', async () => {
    const answers: unknown[] = [];
    /** As the idempotency claim's: refused when its try-lock is not granted. */
    const opening = (label: string): Opening => ({
      locks: [TRY_LOCK.with(label)],
      reads: [LABELS.with()],
      check: (locks, reads) => {
        answers.push([locks, reads]);
        if (locks[0] !== true) throw new Error('refused by the opening');
      },
    });
    const free = async (label: string) => {
      const { rows } = await m.check.query(`SELECT pg_try_advisory_lock(7340299, hashtext($1)) AS free`, [label]);
      if (rows[0].free) await m.check.query(`SELECT pg_advisory_unlock(7340299, hashtext($1))`, [label]);
      return rows[0].free as boolean;
    };
    await m.check.query(`INSERT INTO tx_probe (label) VALUES ('seen by the opening')`);
    const tx = transactions.begin(opening('opened'));
    const trips = await roundTripsOf(async () => {
      expect(await tx.read({ locks: [PROBE_LOCK.with('behind the opening')], reads: [BACKEND_PID.with()] })).toEqual([[{ pid: expect.any(Number) }]]);
    });
    expect(trips).toEqual([['BEGIN', 'locks:test-try-lock>test-probe-lock', 'test-labels', 'test-backend-pid']]);
    // The check is given the opening's answers only.
    expect(answers).toEqual([[[true], [[{ label: 'seen by the opening' }]]]]);
    expect(await free('behind the opening')).toBe(false);
    // Held by this transaction, the opening's lock is refused to a second one, which then takes none of its read's locks.
    const second = transactions.begin(opening('opened'));
    await expect(second.read({ locks: [PROBE_LOCK.with('gated')], reads: [LABELS.with()] })).rejects.toThrow('refused by the opening');
    expect(answers.at(-1)).toEqual([[false], [[{ label: 'seen by the opening' }]]]);
    expect(await free('gated')).toBe(true);
    await second.rollback();
    await tx.rollback();
    expect(await free('behind the opening')).toBe(true);

    // A read that waits for row locks is sent only once the check has passed, in a round trip of its own.
    const holder = transactions.begin(opening('rows'));
    expect(await roundTripsOf(() => holder.read({ reads: [LABELS.with()], waitsForRows: true }))).toEqual([
      ['BEGIN', OPENING_LOCKS, 'test-labels'],
      ['test-labels'],
    ]);
    const refused = transactions.begin(opening('rows'));
    expect(await roundTripsOf(() => expect(refused.read({ reads: [LABELS.with()], waitsForRows: true })).rejects.toThrow('refused by the opening'))).toEqual([
      ['BEGIN', OPENING_LOCKS, 'test-labels'],
    ]);
    await refused.rollback();
    await holder.rollback();

    // A commit without a read sends the opening first.
    const unread = transactions.begin(opening('unread'));
    unread.write(INSERT_PROBE.with('after the opening'));
    expect(await roundTripsOf(() => unread.commit())).toEqual([
      ['BEGIN', OPENING_LOCKS, 'test-labels'],
      ['test-insert-probe', 'COMMIT'],
    ]);
    expect(answers).toHaveLength(5);
    expect(await labels()).toEqual(['after the opening', 'seen by the opening']);
    expect(await busyConnections()).toEqual([]);
  });

  it('sends the opening in manager() mode too, once TypeORM has begun the transaction, before the work uses it', async () => {
    const checked: unknown[] = [];
    const opening: Opening = { locks: [TRY_LOCK.with('managed')], reads: [], check: (locks) => void checked.push(locks) };
    const tx = transactions.begin(opening);
    try {
      expect(await roundTripsOf(() => tx.manager())).toEqual([['START'], [OPENING_LOCKS]]);
      expect(checked).toEqual([[true]]);
      expect((await m.check.query(`SELECT pg_try_advisory_lock(7340298, hashtext('managed')) AS free`)).rows[0].free).toBe(false);
      // Read once: a later read does not send it again.
      expect(await roundTripsOf(() => tx.read({ reads: [LABELS.with()] }))).toEqual([['test-labels']]);
    } finally {
      await tx.rollback();
    }
    expect(checked).toHaveLength(1);
  });

  it('sends the statements of one round trip in one write on the socket, pipelined, each answered on its own', async () => {
    await transactions.run(async (tx) => tx.write(INSERT_PROBE.with('warm')));
    const tx = transactions.begin();
    let rows: unknown;
    // BEGIN, the locks and two reads: four statements, one write.
    expect(await writesOf(async () => ([rows] = await tx.read({ locks: [PROBE_LOCK.with('probe')], reads: [LABELS.with(), BACKEND_PID.with()] })))).toBe(1);
    expect(rows).toEqual([{ label: 'warm' }]);
    tx.write(INSERT_PROBE.with('one'), INSERT_OTHER.with(1, 'other'));
    // The writes and COMMIT.
    expect(await writesOf(() => tx.commit())).toBe(1);
    expect(await labels()).toEqual(['one', 'warm']);
    // Nothing read: BEGIN, the write and COMMIT, in one.
    expect(await writesOf(() => transactions.run(async (next) => next.write(INSERT_PROBE.with('two'))))).toBe(1);
    // A failing statement among them fails alone; the transaction is rolled back and nothing it wrote stays.
    const failing = transactions.begin();
    await expect(failing.read({ reads: [LABELS.with(), new PreparedStatement('test-division', 'SELECT 1 / $1::int AS n').with(0)] })).rejects.toMatchObject({
      code: '22012',
    });
    await failing.rollback();
    expect(await busyConnections()).toEqual([]);
  });

  it('composes the writes of several tables into one statement, each with its own values, sent with BEGIN and COMMIT when nothing was read', async () => {
    await m.check.query(`INSERT INTO tx_other (n, label) VALUES (1, 'old')`);
    const trips = await roundTripsOf(() =>
      transactions.run(async (tx) => {
        tx.write(INSERT_PROBE.with('probe'), INSERT_OTHER.with(2, 'new'), RENAME_OTHER.with(1, 'renamed'));
      }),
    );
    expect(trips).toEqual([['BEGIN', 'writes:test-insert-probe+test-insert-other+test-rename-other', 'COMMIT']]);
    expect(await labels()).toEqual(['probe']);
    expect(await others()).toEqual([
      { n: 1, label: 'renamed' },
      { n: 2, label: 'new' },
    ]);
    // One write is sent as itself.
    expect(await roundTripsOf(() => transactions.run(async (tx) => tx.write(INSERT_OTHER.with(3, 'alone'))))).toEqual([
      ['BEGIN', 'test-insert-other', 'COMMIT'],
    ]);
    expect(await others()).toContainEqual({ n: 3, label: 'alone' });
  });

  it('names a long composition within PostgreSQL\u2019s 63 bytes, apart from another that begins alike, on the same connection', async () => {
    const names: string[] = [];
    for (let round = 0; round < 3; round += 1) {
      for (const last of [INSERT_PROBE.with(`probe-${round}`), INSERT_OTHER.with(10 + round, `other-${round}`)]) {
        // Sequential transactions reuse the connection given back last: the two statements meet on it.
        const [[, write]] = await roundTripsOf(() =>
          transactions.run(async (tx) => {
            tx.write(...Array.from({ length: 4 }, (_, i) => INSERT_PROBE.with(`${round}-${i}`)), last);
          }),
        );
        names.push(write);
      }
    }
    expect(new Set(names).size).toBe(2);
    for (const name of names) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(63);
    expect(await labels()).toHaveLength(3 * 2 * 4 + 3);
    expect(await others()).toHaveLength(3);
  });

  it('commits nothing when a write fails, throws PostgreSQL\u2019s error (its own at COMMIT too), and runs no afterCommit listener', async () => {
    const calls: string[] = [];
    const tx = transactions.begin();
    await tx.read({ reads: [LABELS.with()] });
    tx.write(INSERT_PROBE.with('before'), INSERT_OTHER.with(3, null), INSERT_PROBE.with('after'));
    tx.afterCommit(() => calls.push('never'));
    await expect(tx.commit([INSERT_PROBE.with('last')])).rejects.toMatchObject({ code: '23502', table: 'tx_other' });
    expect(await labels()).toEqual([]);
    expect(await others()).toEqual([]);

    await m.check.query(`CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.label = 'refused at commit' THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NULL; END $$`);
    await m.check.query(
      `CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON tx_probe DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit()`,
    );
    try {
      const deferred = transactions.begin();
      deferred.write(INSERT_OTHER.with(4, 'with it'), INSERT_PROBE.with('refused at commit'));
      deferred.afterCommit(() => calls.push('never either'));
      await expect(deferred.commit()).rejects.toThrow('refused at commit');
    } finally {
      await m.check.query('DROP TRIGGER refuse_at_commit ON tx_probe');
      await m.check.query('DROP FUNCTION refuse_at_commit()');
    }
    expect(await labels()).toEqual([]);
    expect(await others()).toEqual([]);
    expect(calls).toEqual([]);
    // What the work refuses is thrown as it is, with nothing committed.
    const refused = new Error('work refused');
    await expect(
      transactions.run(async (tx) => {
        tx.write(INSERT_PROBE.with('refused'));
        tx.afterCommit(() => calls.push('refused'));
        throw refused;
      }),
    ).rejects.toBe(refused);
    expect(await labels()).toEqual([]);
    expect(calls).toEqual([]);
    expect(await busyConnections()).toEqual([]);
  });

  it('runs afterCommit listeners once PostgreSQL has committed, never after a rollback', async () => {
    const calls: string[] = [];
    let seen: Promise<string[]> | undefined;
    const tx = transactions.begin();
    tx.write(INSERT_PROBE.with('x'));
    tx.afterCommit(() => {
      calls.push('committed');
      // What the listener announces can be read by anyone by now.
      seen = labels();
    });
    const committing = tx.commit();
    expect(calls).toEqual([]);
    await committing;
    expect(calls).toEqual(['committed']);
    expect(await seen).toEqual(['x']);

    const rolledBack = transactions.begin();
    await rolledBack.read({ reads: [LABELS.with()] });
    rolledBack.write(INSERT_PROBE.with('rolled back'));
    rolledBack.afterCommit(() => calls.push('rolled back'));
    await rolledBack.rollback();
    expect(calls).toEqual(['committed']);
    expect(await labels()).toEqual(['x']);
  });

  it('gives the connection back clean on a rollback: nothing written, the locks free, no transaction left open', async () => {
    const tx = transactions.begin();
    const [[{ pid }]] = await tx.read({ locks: [PROBE_LOCK.with('rolled-back')], reads: [BACKEND_PID.with()] });
    tx.write(INSERT_PROBE.with('never'));
    expect((await m.check.query(`SELECT state FROM pg_stat_activity WHERE pid = $1`, [pid])).rows).toEqual([{ state: 'idle in transaction' }]);
    await tx.rollback();
    expect((await m.check.query(`SELECT state FROM pg_stat_activity WHERE pid = $1`, [pid])).rows).toEqual([{ state: 'idle' }]);
    expect((await m.check.query(`SELECT count(*)::int AS n FROM pg_locks WHERE pid = $1 AND locktype = 'advisory'`, [pid])).rows[0].n).toBe(0);
    // Given back, not closed: the pool hands it out again.
    expect((await BACKEND_PID.run(dataSource.manager))[0].pid).toBe(pid);
    // Ended, a rollback does nothing more; a transaction never begun takes no connection at all.
    await tx.rollback();
    await transactions.begin().rollback();
    expect(await labels()).toEqual([]);
    expect(await busyConnections()).toEqual([]);
  });

  it('in manager() mode, commits the writes queued with write() together with TypeORM\u2019s own, with its COMMIT, and both or neither', async () => {
    const calls: string[] = [];
    const tx = transactions.begin();
    const manager = await tx.manager();
    expect(manager.queryRunner?.isTransactionActive).toBe(true);
    await manager.query('INSERT INTO tx_probe (label) VALUES ($1)', ['typeorm']);
    // A read in the same transaction sees TypeORM's write.
    expect((await tx.read({ reads: [LABELS.with()] }))[0]).toEqual([{ label: 'typeorm' }]);
    afterCommit(manager, () => calls.push('manager'));
    tx.afterCommit(() => calls.push('tx'));
    tx.write(INSERT_OTHER.with(5, 'queued'));
    expect(await labels()).toEqual([]);
    expect(await roundTripsOf(() => tx.commit())).toEqual([['test-insert-other', 'COMMIT']]);
    expect(calls).toEqual(['tx', 'manager']);
    expect(await labels()).toEqual(['typeorm']);
    expect(await others()).toEqual([{ n: 5, label: 'queued' }]);

    // A queued write that fails takes TypeORM's writes with it, although TypeORM reports its COMMIT as done.
    const failing = transactions.begin();
    const failingManager = await failing.manager();
    await failingManager.query('INSERT INTO tx_probe (label) VALUES ($1)', ['typeorm, rolled back']);
    afterCommit(failingManager, () => calls.push('never'));
    failing.write(INSERT_OTHER.with(6, null));
    await expect(failing.commit()).rejects.toMatchObject({ code: '23502' });
    expect(calls).toEqual(['tx', 'manager']);
    expect(await labels()).toEqual(['typeorm']);
    expect(await others()).toEqual([{ n: 5, label: 'queued' }]);

    // A transaction begun by a read is not TypeORM's.
    const read = transactions.begin();
    await read.read({ reads: [LABELS.with()] });
    await expect(read.manager()).rejects.toThrow('This transaction was begun by a read; it has no EntityManager');
    await read.rollback();
    expect(await busyConnections()).toEqual([]);
  });

  it('calls afterCommit(manager, …) listeners of a TypeORM transaction once committed, never after a rollback, at once outside one, not at a savepoint', async () => {
    const calls: string[] = [];
    await dataSource.transaction(async (tx) => {
      afterCommit(tx, () => calls.push('committed'));
      await tx.query('INSERT INTO tx_probe (label) VALUES ($1)', ['x']);
      await tx.transaction((inner) => inner.query('INSERT INTO tx_probe (label) VALUES ($1)', ['inner']));
      expect(calls).toEqual([]);
    });
    await expect(
      dataSource.transaction(async (tx) => {
        afterCommit(tx, () => calls.push('rolled back'));
        await tx.query('INSERT INTO tx_probe (label) VALUES ($1)', [null]);
      }),
    ).rejects.toMatchObject({ driverError: expect.objectContaining({ code: '23502' }) });
    afterCommit(dataSource.manager, () => calls.push('autocommit'));
    expect(calls).toEqual(['committed', 'autocommit']);
    expect(await labels()).toEqual(['inner', 'x']);
  });

  it('runs the work again, once and only with retryOnConflict, when its write meets a row committed meanwhile (a unique violation)', async () => {
    /** Reads the label; inserts it when absent. `meanwhile`: another transaction commits it between the read and the commit. */
    const work = (label: string, attempts: string[], meanwhile: (attempt: number) => boolean) => async (tx: Transaction) => {
      attempts.push(label);
      const [found] = await tx.read({ reads: [FIND_UNIQUE.with(label)] });
      if (meanwhile(attempts.length)) await m.check.query('INSERT INTO tx_unique (label) VALUES ($1)', [`${label}`]);
      if (found.length > 0) return 'found';
      tx.write(INSERT_UNIQUE.with(label));
      return 'inserted';
    };
    const retried: string[] = [];
    expect(
      await transactions.run(
        work('retried', retried, (attempt) => attempt === 1),
        { retryOnConflict: true },
      ),
    ).toBe('found');
    expect(retried).toHaveLength(2);

    const once: string[] = [];
    await expect(transactions.run(work('once', once, (attempt) => attempt === 1))).rejects.toMatchObject({ code: '23505' });
    expect(once).toHaveLength(1);

    // The second attempt's conflict is thrown: a retry is not a loop.
    let n = 0;
    const twice: string[] = [];
    const always = async (tx: Transaction) => {
      twice.push('attempt');
      n += 1;
      await tx.read({ reads: [FIND_UNIQUE.with(`twice-${n}`)] });
      await m.check.query('INSERT INTO tx_unique (label) VALUES ($1)', [`twice-${n}`]);
      tx.write(INSERT_UNIQUE.with(`twice-${n}`));
    };
    await expect(transactions.run(always, { retryOnConflict: true })).rejects.toMatchObject({ code: '23505' });
    expect(twice).toHaveLength(2);
    expect(await busyConnections()).toEqual([]);
  });

  it('refuses a value it cannot send before it reaches a connection, which keeps working', async () => {
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    await expect(INSERT_PROBE.run(dataSource.manager, [circular])).rejects.toThrow(/circular/i);
    const tx = transactions.begin();
    tx.write(INSERT_PROBE.with('with it'), INSERT_PROBE.with(circular));
    await expect(tx.commit()).rejects.toThrow(/circular/i);
    await INSERT_PROBE.run(dataSource.manager, ['after']);
    await transactions.run(async (next) => next.write(INSERT_PROBE.with('after, in a transaction')));
    expect(await labels()).toEqual(['after', 'after, in a transaction']);
    expect(await busyConnections()).toEqual([]);
  });

  it('gives connections back outside any transaction, whatever the transactions did', async () => {
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        switch (i % 5) {
          case 0:
            return transactions.run(async () => Promise.reject(new Error('work refused'))).catch(() => undefined);
          case 1:
            return transactions.run(async (tx) => tx.write(INSERT_PROBE.with(null))).catch(() => undefined);
          case 2: {
            const tx = transactions.begin();
            await tx.read({ locks: [PROBE_LOCK.with(`mix-${i}`)], reads: [BACKEND_PID.with()] });
            tx.write(INSERT_PROBE.with(`rolled back ${i}`));
            return tx.rollback();
          }
          case 3: {
            const tx = transactions.begin();
            const manager = await tx.manager();
            await manager.query('INSERT INTO tx_probe (label) VALUES ($1)', [`managed ${i}`]);
            tx.write(INSERT_OTHER.with(i, null));
            return tx.commit().catch(() => undefined);
          }
          default:
            return transactions.run(async (tx) => {
              await tx.read({ locks: [PROBE_LOCK.with(`mix-${i}`)], reads: [BACKEND_PID.with()] });
              tx.write(INSERT_PROBE.with(`ok-${i}`));
            });
        }
      }),
    );
    expect(await busyConnections()).toEqual([]);
    // The query above names the application's connections: it sees one once one is open.
    await BACKEND_PID.run(dataSource.manager);
    expect(await appConnections()).toBeGreaterThan(0);
    expect(await labels()).toEqual(Array.from({ length: 8 }, (_, k) => `ok-${5 * k + 4}`).sort());
    expect(await others()).toEqual([]);
  });

  it('gives a connection back, not closed, when PostgreSQL refused a write and answered the COMMIT', async () => {
    for (const managed of [false, true]) {
      const tx = transactions.begin();
      if (managed) await tx.manager();
      const [[{ pid }]] = await tx.read({ reads: [BACKEND_PID.with()] });
      tx.write(INSERT_PROBE.with(null));
      await expect(tx.commit()).rejects.toMatchObject({ code: '23502' });
      // PostgreSQL answered: the connection is outside any transaction, and the pool hands it out next.
      expect((await BACKEND_PID.run(dataSource.manager))[0].pid).toBe(pid);
    }
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
    const tx = transactions.begin();
    const manager = await tx.manager();
    const [[{ pid }]] = await tx.read({ reads: [BACKEND_PID.with()] });
    await manager.query('DEALLOCATE "test-backend-pid"');
    await expect(tx.read({ reads: [BACKEND_PID.with()] })).rejects.toMatchObject({ code: '26000' });
    await tx.rollback();
    await waitFor(async () => (await m.check.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0, 'the connection to be closed');
    for (let i = 0; i < 6; i += 1) expect((await BACKEND_PID.run(dataSource.manager))[0].pid).not.toBe(pid);
  });

  it('refuses a transaction used after it ended, or whose connection was lost: its connection may serve another request by now', async () => {
    for (const end of [(tx: Transaction) => tx.commit(), (tx: Transaction) => tx.rollback()]) {
      const tx = transactions.begin();
      await tx.read({ reads: [LABELS.with()] });
      tx.write(INSERT_PROBE.with('inside'));
      await end(tx);
      await expect(tx.read({ reads: [LABELS.with()] })).rejects.toThrow('This transaction has ended');
      expect(() => tx.write(INSERT_PROBE.with('late'))).toThrow('This transaction has ended');
      await expect(tx.commit([INSERT_PROBE.with('late')])).rejects.toThrow('This transaction has ended');
    }
    expect(await labels()).toEqual(['inside']);

    // Its connection lost mid-transaction (TypeORM gives it back at once): the request gets a 503, and nothing is sent.
    const lost = transactions.begin();
    const [[{ pid }]] = await lost.read({ reads: [BACKEND_PID.with()] });
    lost.write(INSERT_PROBE.with('lost'));
    const pool = m.moduleRef.get(PoolStatistics);
    const open = pool.counts().total;
    await m.check.query('SELECT pg_terminate_backend($1)', [pid]);
    await waitFor(async () => (await m.check.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0, 'the session to end');
    // The server's end of it is gone; the gateway's side learns it when the socket closes, which a busy
    // process may handle later: until the pool has dropped it, a statement sent would fail as unreachable.
    await waitFor(async () => pool.counts().total < open, 'the pool to drop the lost connection');
    const failure = await lost.commit().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DatabaseUnavailable);
    expect(failure).toMatchObject({ failure: 'session_ended' });
    await lost.rollback();
    expect(await labels()).toEqual(['inside']);
    expect(await busyConnections()).toEqual([]);
  });
});

import { Client } from 'pg';
import { Database, Transaction, TransactionRolledBack } from '../../src/database/database';
import { bind, sql } from '../../src/database/sql';
import { mediumDatabase, MediumDatabase } from '../support/medium';

const INSERT_PROBE = sql('test-insert-probe', 'INSERT INTO tx_probe (label) VALUES ($1)');
const NOOP = sql('test-noop', 'SELECT 1');
const BACKEND_PID = sql('test-backend-pid-now', 'SELECT pg_backend_pid() AS pid');

describe('Database', () => {
  let m: MediumDatabase;
  let db: Database;
  let check: Client;
  const labels = async () => (await check.query('SELECT label FROM tx_probe ORDER BY label')).rows.map((r) => r.label);

  beforeAll(async () => {
    m = await mediumDatabase({ poolSize: 10 });
    db = m.db;
    check = new Client({ connectionString: m.url });
    await check.connect();
    await check.query('CREATE TABLE tx_probe (label text NOT NULL)');
  });
  beforeEach(() => check.query('TRUNCATE tx_probe'));
  afterAll(async () => {
    await check.end();
    await m.close();
  });

  describe('transaction', () => {
    it('keeps every write of a failed transaction out, on fresh and used connections, and commits the others', async () => {
      // Twice the pool's size, at once: fresh connections and used ones.
      const attempts = Array.from({ length: 20 }, (_, i) => i);
      await Promise.all(
        attempts.map((i) =>
          db
            .transaction(async (tx) => {
              await tx.query(INSERT_PROBE, [`first-${i}`]);
              await tx.query(INSERT_PROBE, [`second-${i}`]);
              throw new Error('refused');
            })
            .catch((error: Error) => expect(error.message).toBe('refused')),
        ),
      );
      expect(await labels()).toEqual([]);
      await Promise.all(attempts.map((i) => db.transaction((tx) => tx.query(INSERT_PROBE, [`kept-${String(i).padStart(2, '0')}`]))));
      expect(await labels()).toEqual(attempts.map((i) => `kept-${String(i).padStart(2, '0')}`));
    });

    it('rolls back when its first statement fails, and the connection goes on serving transactions', async () => {
      for (let i = 0; i < 12; i += 1) await expect(db.transaction((tx) => tx.query(INSERT_PROBE, [null]))).rejects.toMatchObject({ code: '23502' });
      await db.transaction((tx) => tx.query(INSERT_PROBE, ['after']));
      expect(await labels()).toEqual(['after']);
    });

    it('runs statements issued together in order, in one round trip, and keeps all of them out when one fails', async () => {
      const sends: number[] = [];
      let answers = 0;
      const query = Client.prototype.query;
      const spy = jest.spyOn(Client.prototype, 'query').mockImplementation(function (this: Client, ...args: unknown[]) {
        sends.push(answers);
        const result = (query as (...a: unknown[]) => Promise<unknown>).apply(this, args);
        void result.then(() => (answers += 1), () => (answers += 1));
        return result;
      } as never);
      try {
        await db.transaction((tx) => Promise.all([tx.query(INSERT_PROBE, ['one']), tx.query(INSERT_PROBE, ['two']), tx.query(INSERT_PROBE, ['three'])]));
      } finally {
        spy.mockRestore();
      }
      // BEGIN and the three inserts were all sent before any answer came back; the COMMIT after them.
      expect(sends).toEqual([0, 0, 0, 0, 4]);
      expect(await labels()).toEqual(['one', 'three', 'two']);

      await check.query('TRUNCATE tx_probe');
      const outcome = await db
        .transaction((tx) => Promise.allSettled([tx.query(INSERT_PROBE, ['before']), tx.query(INSERT_PROBE, [null]), tx.query(INSERT_PROBE, ['after'])]).then((s) => {
          throw s.map((r) => (r.status === 'fulfilled' ? 'ran' : (r.reason as { code: string }).code));
        }))
        .catch((thrown: unknown) => thrown);
      // The statement after the failed one only reports the aborted transaction (25P02): it never ran.
      expect(outcome).toEqual(['ran', '23502', '25P02']);
      expect(await labels()).toEqual([]);
    });

    it('refuses its handle once it has ended, when the connection may serve another request', async () => {
      let kept!: Transaction;
      await db.transaction(async (tx) => {
        kept = tx;
        await tx.query(NOOP);
      });
      await expect(kept.query(INSERT_PROBE, ['too-late'])).rejects.toThrow('has ended');
      expect(await labels()).toEqual([]);
    });

    it('calls afterCommit listeners once committed, never after a rollback', async () => {
      const calls: string[] = [];
      await db.transaction(async (tx) => {
        tx.afterCommit(() => calls.push('committed'));
        await tx.query(NOOP);
        expect(calls).toEqual([]);
      });
      await expect(
        db.transaction(async (tx) => {
          tx.afterCommit(() => calls.push('rolled back'));
          await tx.query(INSERT_PROBE, [null]);
        }),
      ).rejects.toMatchObject({ code: '23502' });
      // A failed statement whose error the work swallowed: PostgreSQL rolls back at COMMIT, and says so.
      await expect(
        db.transaction(async (tx) => {
          tx.afterCommit(() => calls.push('swallowed'));
          await tx.query(INSERT_PROBE, [null]).catch(() => undefined);
        }),
      ).rejects.toBeInstanceOf(TransactionRolledBack);
      expect(calls).toEqual(['committed']);
    });

    it('fails a statement whose value cannot be sent without breaking the connection', async () => {
      const circular: Record<string, unknown> = {};
      circular.self = circular;
      await expect(db.transaction((tx) => tx.query(INSERT_PROBE, [circular]))).rejects.toThrow(/circular/i);
      await db.transaction((tx) => tx.query(INSERT_PROBE, ['after']));
      expect(await labels()).toEqual(['after']);
    });
  });

  describe('transactionOf', () => {
    it('sends BEGIN, the statements and COMMIT together and answers each statement\u2019s rows', async () => {
      const [inserted, [{ pid }]] = await db.transactionOf([bind(INSERT_PROBE, 'one'), bind(BACKEND_PID)]);
      expect(inserted).toEqual([]);
      expect(pid).toEqual(expect.any(Number));
      expect(await labels()).toEqual(['one']);
    });

    it('throws the first failure and keeps everything out, PostgreSQL\u2019s own error at COMMIT included', async () => {
      await expect(db.transactionOf([bind(INSERT_PROBE, 'before'), bind(INSERT_PROBE, null), bind(INSERT_PROBE, 'after')])).rejects.toMatchObject({ code: '23502' });
      await check.query(`CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.label = 'refused at commit' THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NULL; END $$`);
      await check.query(`CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON tx_probe DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit()`);
      try {
        await expect(db.transactionOf([bind(INSERT_PROBE, 'four'), bind(INSERT_PROBE, 'refused at commit')])).rejects.toThrow('refused at commit');
      } finally {
        await check.query('DROP TRIGGER refuse_at_commit ON tx_probe');
      }
      expect(await labels()).toEqual([]);
      // The connections are fine: the next transactions commit.
      await Promise.all(Array.from({ length: 10 }, (_, i) => db.transactionOf([bind(INSERT_PROBE, `ok-${i}`)])));
      expect(await labels()).toHaveLength(10);
    });
  });

  describe('connections', () => {
    it('go back to the pool outside any transaction, whatever the transactions did', async () => {
      await Promise.all(
        Array.from({ length: 30 }, (_, i) => {
          if (i % 3 === 0) return db.transaction(async () => Promise.reject(new Error('work refused'))).catch(() => undefined);
          if (i % 3 === 1) return db.transactionOf([bind(INSERT_PROBE, null)]).catch(() => undefined);
          return db.transaction((tx) => Promise.all([tx.query(INSERT_PROBE, [`ok-${i}`]), tx.query(NOOP)]));
        }),
      );
      const states = await check.query<{ state: string }>(
        `SELECT state FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tax-document-gateway' AND state IS NOT NULL`,
      );
      expect(states.rows.length).toBeGreaterThan(0);
      expect(states.rows.filter(({ state }) => state !== 'idle')).toEqual([]);
    });

    it('are kept after a statement PostgreSQL refused, and closed after one whose connection failed', async () => {
      const [{ pid }] = await db.query<{ pid: number }>(BACKEND_PID);
      await expect(db.query(INSERT_PROBE, [null])).rejects.toMatchObject({ code: '23502' });
      const pids = new Set((await Promise.all(Array.from({ length: 4 }, () => db.query<{ pid: number }>(BACKEND_PID)))).map(([row]) => row.pid));
      expect(pids.has(pid)).toBe(true);

      await check.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1', [pid]);
      // Whatever the pool hands out next works: a terminated connection is replaced, never reused.
      for (let i = 0; i < 6; i += 1) expect((await db.query<{ pid: number }>(BACKEND_PID).catch(() => [{ pid: -1 }]))[0].pid).not.toBe(pid);
    });
  });
});

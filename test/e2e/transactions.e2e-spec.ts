import { Client, Connection } from 'pg';
import { StatementSkipped } from '../../src/database/batch';
import { Database, statement, Transaction } from '../../src/database/database';
import { documentBody, newIdempotencyKey, newSourceWithKey, postDocument, sendWebhook, signedWebhook } from '../support/factories';
import { startTestApp, TestApp, TEST_WEBHOOK_SECRET } from '../support/test-app';

const SET_FLAG = statement('test-set-flag', `SELECT set_config('test.flag', 'on', true)`);
const NOOP = statement('test-noop', 'SELECT 1');
const INSERT_PROBE = statement('test-insert-probe', 'INSERT INTO tx_probe (label) VALUES ($1)');
const BACKEND_PID = statement('test-backend-pid', 'SELECT pg_backend_pid() AS pid');

describe('Database transactions: all or nothing', () => {
  let t: TestApp;
  let db: Database;
  const labels = async () => (await t.db.query('SELECT label FROM tx_probe ORDER BY label')).rows.map((r) => r.label);

  beforeAll(async () => {
    t = await startTestApp();
    db = t.app.get(Database);
    await t.db.query('CREATE TABLE tx_probe (label text NOT NULL)');
  });
  afterAll(() => t.close());

  it('keeps every write of a failed transaction out, whether its first statement is a named one or TypeORM’s, on fresh and used connections', async () => {
    // Twice the pool's size, at once: fresh connections and used ones.
    const attempts = Array.from({ length: 20 }, (_, i) => i);
    await Promise.all(
      attempts.map((i) =>
        db
          .run(async (tx) => {
            if (i % 2) await tx.query(INSERT_PROBE, [`named-${i}`]);
            else await tx.manager.query('INSERT INTO tx_probe (label) VALUES ($1)', [`typeorm-${i}`]);
            await tx.query(INSERT_PROBE, [`second-${i}`]);
            throw new Error('refused');
          })
          .catch((error: Error) => expect(error.message).toBe('refused')),
      ),
    );
    expect(await labels()).toEqual([]);

    await Promise.all(attempts.map((i) => db.run((tx) => tx.query(INSERT_PROBE, [`kept-${String(i).padStart(2, '0')}`]))));
    expect(await labels()).toEqual(attempts.map((i) => `kept-${String(i).padStart(2, '0')}`));
  });

  it('rolls back when the first statement itself fails, and the connection goes on serving transactions', async () => {
    await t.db.query('TRUNCATE tx_probe');
    for (let i = 0; i < 12; i += 1) {
      await expect(db.run((tx) => tx.query(INSERT_PROBE, [null]))).rejects.toMatchObject({ code: '23502' });
    }
    await db.run((tx) => tx.query(INSERT_PROBE, ['after']));
    expect(await labels()).toEqual(['after']);
  });

  it('refuses a transaction handle used after its run has ended, when its connection may serve another request', async () => {
    let kept!: Transaction;
    await db.run(async (tx) => {
      kept = tx;
      await tx.query(NOOP);
    });
    await expect(kept.query(INSERT_PROBE, ['too-late'])).rejects.toThrow('has ended');
    expect(() => kept.manager).toThrow('has ended');
    expect(() => kept.afterCommit(() => undefined)).toThrow('has ended');
  });

  it('runs statements sent together in order, and when one fails keeps every one out; those behind it never run', async () => {
    await t.db.query('TRUNCATE tx_probe');
    const answers = await db
      .run(async (tx) => {
        const sent = [tx.query(INSERT_PROBE, ['before']), tx.query(INSERT_PROBE, [null]), tx.query(INSERT_PROBE, ['after'])];
        return Promise.allSettled(sent).then((settled) => {
          throw settled.map((s) => (s.status === 'fulfilled' ? 'ran' : s.reason instanceof StatementSkipped ? 'skipped' : (s.reason as { code: string }).code));
        });
      })
      .catch((outcome: unknown) => outcome);
    expect(answers).toEqual(['ran', '23502', 'skipped']);
    expect(await labels()).toEqual([]);
    await expect(db.run((tx) => Promise.all([tx.query(INSERT_PROBE, ['before']), tx.query(INSERT_PROBE, [null]), tx.query(INSERT_PROBE, ['after'])]))).rejects.toMatchObject({
      code: '23502',
    });
    expect(await labels()).toEqual([]);
    await db.run((tx) => Promise.all([tx.query(INSERT_PROBE, ['one']), tx.query(INSERT_PROBE, ['two'])]));
    expect(await labels()).toEqual(['one', 'two']);
  });

  it('commits with the statement queryAndCommit sends, and keeps the whole transaction out when that statement fails', async () => {
    await t.db.query('TRUNCATE tx_probe');
    await db.run(async (tx) => {
      await tx.query(INSERT_PROBE, ['first']);
      expect(await tx.queryAndCommit(INSERT_PROBE, ['last'])).toEqual([]);
    });
    expect(await labels()).toEqual(['first', 'last']);

    await t.db.query('TRUNCATE tx_probe');
    await expect(
      db.run(async (tx) => {
        await tx.query(INSERT_PROBE, ['first']);
        await tx.queryAndCommit(INSERT_PROBE, [null]);
      }),
    ).rejects.toMatchObject({ code: '23502' });
    // Its failure not waited for by the work: the commit itself reports it.
    await expect(
      db.run(async (tx) => {
        await tx.query(INSERT_PROBE, ['first']);
        tx.queryAndCommit(INSERT_PROBE, [null]).catch(() => undefined);
      }),
    ).rejects.toThrow();
    expect(await labels()).toEqual([]);
    await db.run((tx) => tx.query(INSERT_PROBE, ['after']));
    expect(await labels()).toEqual(['after']);
  });

  it('sends the statements issued together as one batch that PostgreSQL answers at one Sync', async () => {
    await t.db.query('TRUNCATE tx_probe');
    const syncs = jest.spyOn(Connection.prototype, 'sync');
    try {
      await db.run(async (tx) => {
        await Promise.all([tx.query(INSERT_PROBE, ['one']), tx.queryAndCommit(INSERT_PROBE, ['two'])]);
      });
      expect(syncs).toHaveBeenCalledTimes(1);
      syncs.mockClear();
      await db.run(async (tx) => {
        await tx.query(INSERT_PROBE, ['three']);
        await tx.query(INSERT_PROBE, ['four']);
      });
      // BEGIN with the first statement, the second alone, the flags read with the COMMIT.
      expect(syncs).toHaveBeenCalledTimes(3);
    } finally {
      syncs.mockRestore();
    }
    expect(await labels()).toEqual(['four', 'one', 'three', 'two']);
  });

  it('commits a transaction sent as one batch at its Sync, without BEGIN or COMMIT, and keeps all of it out when any part fails, its commit included', async () => {
    await t.db.query('TRUNCATE tx_probe');
    const rollbacks = jest.spyOn(Client.prototype, 'query');
    const sentRollback = () => rollbacks.mock.calls.some(([sql]) => sql === 'ROLLBACK');
    try {
      await db.run((tx) => Promise.all([tx.query(INSERT_PROBE, ['one']), tx.queryAndCommit(INSERT_PROBE, ['two'])]));
      expect(await labels()).toEqual(['one', 'two']);
      await expect(db.run((tx) => Promise.all([tx.query(INSERT_PROBE, ['three']), tx.queryAndCommit(INSERT_PROBE, [null])]))).rejects.toMatchObject({ code: '23502' });
      // PostgreSQL's own error at the commit, after every statement was answered.
      await t.db.query(`CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.label = 'refused at commit' THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NULL; END $$`);
      await t.db.query(`CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON tx_probe DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_at_commit()`);
      try {
        const answered: string[] = [];
        await expect(
          db.run((tx) => Promise.all([tx.query(INSERT_PROBE, ['four']).then(() => answered.push('four')), tx.queryAndCommit(INSERT_PROBE, ['refused at commit']).then(() => answered.push('last'))])),
        ).rejects.toThrow('refused at commit');
        expect(answered).toEqual(['four', 'last']);
      } finally {
        await t.db.query('DROP TRIGGER refuse_at_commit ON tx_probe');
      }
      // Rolled back by PostgreSQL at the Sync: nothing left to roll back.
      expect(sentRollback()).toBe(false);
    } finally {
      rollbacks.mockRestore();
    }
    expect(await labels()).toEqual(['one', 'two']);
  });

  it('keeps a connection whose batch failed at a statement it was preparing, and knows whether PostgreSQL kept the statement', async () => {
    /** The backend that ran `statement` (issued with the look-up of its pid), and how the statement ended. */
    const attempt = async (failing: typeof INSERT_PROBE, value: string | null) => {
      let pid = 0;
      const outcome = await db
        .run(async (tx) => {
          const [looked, ran] = await Promise.allSettled([tx.query<{ pid: number }>(BACKEND_PID), tx.query(failing, [value])]);
          if (looked.status === 'fulfilled') pid = looked.value[0].pid;
          if (ran.status === 'rejected') throw ran.reason;
        })
        .then(
          () => 'ran',
          (error: { code?: string }) => error.code ?? 'failed',
        );
      return { pid, outcome };
    };
    // Parsed, then failed when run: PostgreSQL keeps the statement; the connection (the pool hands back the last
    // one returned) runs it again without a second Parse, which would fail with 42P05.
    const kept = statement(`test-kept-${Date.now()}`, 'INSERT INTO tx_probe (label) VALUES ($1)');
    const first = await attempt(kept, null);
    expect(first.outcome).toBe('23502');
    expect(await attempt(kept, 'kept')).toEqual({ pid: first.pid, outcome: 'ran' });
    // Refused at the Parse: nothing kept, so it is parsed again next time (no 26000 "does not exist").
    const late = statement(`test-late-${Date.now()}`, 'INSERT INTO tx_probe_late (label) VALUES ($1)');
    expect((await attempt(late, 'early')).outcome).toBe('42P01');
    await t.db.query('CREATE TABLE tx_probe_late (label text)');
    expect(await attempt(late, 'late')).toEqual({ pid: first.pid, outcome: 'ran' });
  });

  it('fails a batch one of whose values cannot be sent before writing any of it, and the connection goes on serving', async () => {
    await t.db.query('TRUNCATE tx_probe');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    await expect(db.run((tx) => Promise.all([tx.query(INSERT_PROBE, ['before']), tx.query(INSERT_PROBE, [circular])]))).rejects.toThrow(/circular/i);
    await db.run((tx) => tx.queryAndCommit(INSERT_PROBE, ['after']));
    expect(await labels()).toEqual(['after']);
  });

  it('refuses a statement after queryAndCommit', async () => {
    await expect(
      db.run(async (tx) => {
        await tx.queryAndCommit(NOOP);
        await tx.query(INSERT_PROBE, ['too-late']);
      }),
    ).rejects.toThrow('queryAndCommit must be its last statement');
  });

  it('calls the afterCommit listeners of a transaction that sent no statement', async () => {
    let called = 0;
    await db.run(async (tx) => tx.afterCommit(() => (called += 1)));
    expect(called).toBe(1);
  });
});

describe('Database transactions: work owed after a commit', () => {
  let t: TestApp;
  let db: Database;
  let flagged = 0;

  beforeAll(async () => {
    t = await startTestApp();
    db = t.app.get(Database);
    db.onCommitFlag('test.flag', () => (flagged += 1));
  });
  afterAll(() => t.close());
  beforeEach(() => (flagged = 0));

  it('calls afterCommit listeners once the transaction has committed, never when it rolls back, and at once outside one', async () => {
    const calls: string[] = [];
    await db.run(async (tx) => {
      tx.afterCommit(() => calls.push('committed'));
      await tx.query(NOOP);
      expect(calls).toEqual([]);
    });
    expect(calls).toEqual(['committed']);

    await expect(
      db.run(async (tx) => {
        tx.afterCommit(() => calls.push('rolled back'));
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(calls).toEqual(['committed']);

    db.afterCommit(() => calls.push('outside'));
    expect(calls).toEqual(['committed', 'outside']);
  });

  it('hears a flag the transaction set only after it committed, and not from a later transaction on the same connections', async () => {
    await db.run(async (tx) => {
      await tx.query(SET_FLAG);
      expect(flagged).toBe(0);
    });
    expect(flagged).toBe(1);

    // The setting is transaction-local: whatever connection the pool hands out next, it is not set.
    await Promise.all(Array.from({ length: 20 }, () => db.run((tx) => tx.query(NOOP))));
    expect(flagged).toBe(1);

    await expect(
      db.run(async (tx) => {
        await tx.query(SET_FLAG);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(flagged).toBe(1);
  });

  it('refuses a flag that is not a custom setting name, which would otherwise be spliced into SQL', () => {
    expect(() => db.onCommitFlag("x'; DROP TABLE documents; --", () => undefined)).toThrow('is not a custom setting');
    expect(() => db.onCommitFlag('work_mem', () => undefined)).toThrow('is not a custom setting');
  });
});

describe('Database transactions: the client-side read timeout', () => {
  let t: TestApp;

  // query_timeout is DB_STATEMENT_TIMEOUT_MS + 2 s: the batch must clear its timer once answered.
  beforeAll(async () => (t = await startTestApp({ env: { DB_STATEMENT_TIMEOUT_MS: '100' } })));
  afterAll(() => t.close());

  it('leaves a connection whose transaction was answered open after the read timeout has passed', async () => {
    const db = t.app.get(Database);
    const [{ pid }] = await db.run((tx) => tx.queryAndCommit<{ pid: number }>(BACKEND_PID));
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await t.db.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount).toBe(1);
  });
});

describe('Database transactions: connections go back clean', () => {
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
      ...Array.from({ length: 20 }, (_, i) => postDocument(t.app, key, documentBody(source, i % 2 ? {} : { providerReference: `PAY-CLEAN-${i}-${Date.now()}` }))),
      ...Array.from({ length: 10 }, () => postDocument(t.app, key, documentBody(source, { totalAmount: 'many' }))),
      ...Array.from({ length: 10 }, (_, i) =>
        sendWebhook(t.app, signedWebhook(TEST_WEBHOOK_SECRET, { eventId: `evt-clean-${i % 5}`, eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: body.providerReference })),
      ),
    ]).then((responses) => responses.map((res) => res.statusCode));
    expect(statuses.filter((code) => ![200, 201, 409, 422].includes(code))).toEqual([]);
    expect(statuses.filter((code) => code === 422)).toHaveLength(10);

    // Every request has been answered: none of the gateway's connections may be left inside a transaction.
    const database = new URL(t.databaseUrl).pathname.slice(1);
    const states = await t.db.query<{ state: string }>('SELECT state FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND state IS NOT NULL', [database]);
    expect(states.rows.length).toBeGreaterThan(0);
    expect(states.rows.filter(({ state }) => state.startsWith('idle in transaction'))).toEqual([]);
  });
});

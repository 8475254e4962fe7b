import { statement, TransactionContext } from '../../src/database/transaction-context';
import { startTestApp, TestApp } from '../support/test-app';

const SET_FLAG = statement('test-set-flag', `SELECT set_config('test.flag', 'on', true)`);
const NOOP = statement('test-noop', 'SELECT 1');

describe('TransactionContext: work owed after a commit', () => {
  let t: TestApp;
  let tx: TransactionContext;
  let flagged = 0;

  beforeAll(async () => {
    t = await startTestApp();
    tx = t.app.get(TransactionContext);
    tx.onCommitFlag('test.flag', () => (flagged += 1));
  });
  afterAll(() => t.close());
  beforeEach(() => (flagged = 0));

  it('calls afterCommit listeners once the transaction has committed, never when it rolls back, and at once outside one', async () => {
    const calls: string[] = [];
    await tx.run(async () => {
      tx.afterCommit(() => calls.push('committed'));
      await tx.query(NOOP);
      expect(calls).toEqual([]);
    });
    expect(calls).toEqual(['committed']);

    await expect(
      tx.run(async () => {
        tx.afterCommit(() => calls.push('rolled back'));
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(calls).toEqual(['committed']);

    tx.afterCommit(() => calls.push('outside'));
    expect(calls).toEqual(['committed', 'outside']);
  });

  it('hears a flag the transaction set only after it committed, and not from a later transaction on the same connections', async () => {
    await tx.run(async () => {
      await tx.query(SET_FLAG);
      expect(flagged).toBe(0);
    });
    expect(flagged).toBe(1);

    // The setting is transaction-local: whatever connection the pool hands out next, it is not set.
    await Promise.all(Array.from({ length: 20 }, () => tx.run(() => tx.query(NOOP))));
    expect(flagged).toBe(1);

    await expect(
      tx.run(async () => {
        await tx.query(SET_FLAG);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(flagged).toBe(1);
  });

  it('refuses a flag that is not a custom setting name, which would otherwise be spliced into SQL', () => {
    expect(() => tx.onCommitFlag("x'; DROP TABLE documents; --", () => undefined)).toThrow('is not a custom setting');
    expect(() => tx.onCommitFlag('work_mem', () => undefined)).toThrow('is not a custom setting');
  });
});

import { Pool, PoolClient } from 'pg';
import { ConnectionGate } from '../../src/database/connection-gate.js';
import { createTestDatabase, dropTestDatabase } from '../support/database.js';

/**
 * A server that refuses writes, as a standby or a former primary does during a failover, played by a
 * session whose transactions are read-only by default: the same SQLSTATE 25006.
 */
describe('ConnectionGate with a server that has become read-only', () => {
  let url: string;
  let pool: Pool;
  let gate: ConnectionGate;

  beforeAll(async () => {
    url = await createTestDatabase();
  });
  afterAll(async () => {
    await dropTestDatabase(url);
  });
  beforeEach(() => {
    const config = { connectionString: url, max: 2, options: '-c default_transaction_read_only=on' };
    gate = new ConnectionGate(config);
    pool = gate.guard(new Pool(config));
  });
  afterEach(async () => {
    await gate.onModuleDestroy();
    await pool.end();
  });

  /** Borrows a connection as TypeORM does (the callback form, releasing with the callback's function). */
  const borrow = () =>
    new Promise<{ client: PoolClient; release: (error?: unknown) => void }>((resolve, reject) =>
      pool.connect((error, client, release) => (error ? reject(error) : resolve({ client: client!, release }))),
    );

  it('closes a connection whose write was refused as read-only instead of handing it out again', async () => {
    const { client, release } = await borrow();
    const refused = await client.query('CREATE TABLE refused (x int)').then(
      () => null,
      (error: { code?: string }) => error.code,
    );
    expect(refused).toBe('25006');
    release();
    expect(pool.totalCount).toBe(0);
  });

  it('keeps a connection whose statement failed for any other reason', async () => {
    const { client, release } = await borrow();
    await expect(client.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '42P01' });
    await new Promise<void>((resolve) => client.query('SELECT 1', () => resolve()));
    release();
    expect(pool.totalCount).toBe(1);
    expect(pool.idleCount).toBe(1);
  });
});

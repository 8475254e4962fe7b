import { Client } from 'pg';

/** Transactions one DO block commits, each with an id of its own: about a second's work. */
const PER_ROUND = 100_000;

/** The id this cluster gives its next transaction (xid8), without taking one. */
async function nextTransaction(client: Client): Promise<bigint> {
  const { rows } = await client.query<{ next: string }>('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS next');
  return BigInt(rows[0].next);
}

/**
 * Uses up transaction ids until the cluster's next one is above `target`: each turn of a DO block's loop
 * takes an id and commits (COMMIT inside DO, allowed since PostgreSQL 11 when the block is sent alone,
 * outside a transaction block). A transaction that wrote nothing but took an id waits for no WAL flush,
 * so this runs at the speed of the commit path, on `connections` connections at once. Needs no more than
 * a connection, so it works on a managed PostgreSQL too. Resolves with the next id when done.
 */
export async function advanceTransactionCounter(url: string, target: bigint, onProgress: (next: bigint) => void, connections = 2): Promise<bigint> {
  const clients = Array.from({ length: connections }, () => new Client({ connectionString: url, application_name: 'tax-document-gateway-advance-xid' }));
  try {
    await Promise.all(clients.map((client) => client.connect()));
    await Promise.all(
      clients.map(async (client, index) => {
        await client.query('SET statement_timeout = 0');
        for (;;) {
          const next = await nextTransaction(client);
          if (index === 0) onProgress(next);
          if (next > target) return;
          const turns = Math.min(PER_ROUND, Number((target - next) / BigInt(connections)) + 1);
          // No parameters: pg sends it as a simple query, the one form in which DO may COMMIT.
          await client.query(`DO $$ BEGIN FOR i IN 1..${turns} LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$`);
        }
      }),
    );
    return await nextTransaction(clients[0]);
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
  }
}

/**
 * The epoch to give `pg_resetwal -e` so that the cluster's next transaction id is above `target`: the
 * epoch is the high 32 bits of an xid8 and nothing else depends on it, so raising it is instant and
 * leaves every row's own (32-bit) transaction ids as they are.
 */
export function resetwalEpochAbove(target: bigint): bigint {
  return (target >> 32n) + 1n;
}

import { execute } from './commands.js';
import type { OperatorServices } from './operator-database.js';

const endpoint = (id: string) => ({
  id,
  source: 'acme-erp',
  url: `https://erp.example/${id}`,
  description: null,
  eventTypes: ['document.created'],
  enabled: true,
  disabledReason: null,
  createdAt: '2026-11-21T10:15:30.123Z',
  updatedAt: '2026-11-21T10:15:30.123Z',
});

/** The paging of a list: a stand-in for the service, whose pages are cut from `rows` like a keyset would. */
function pagesOf(rows: string[]) {
  const calls: Array<[string | undefined, number]> = [];
  const page = async ({ cursor }: { cursor?: string }, limit: number) => {
    calls.push([cursor, limit]);
    const start = cursor ? Number(cursor) : 0;
    const data = rows.slice(start, start + limit).map(endpoint);
    return { data, nextCursor: start + limit < rows.length ? String(start + limit) : null };
  };
  return { calls, page };
}

describe('execute: lists', () => {
  it('answers one page with its nextCursor, and tells a person how to go on', async () => {
    const { calls, page } = pagesOf(['a', 'b', 'c']);
    const services = { endpoints: { pageForAdmin: page } } as unknown as OperatorServices;
    const outcome = await execute({ name: 'endpoints list', paging: { limit: 2, all: false } }, services);
    expect(outcome.body).toEqual({ data: [endpoint('a'), endpoint('b')], nextCursor: '2' });
    expect(outcome.text.split('\n')).toHaveLength(4);
    expect(outcome.hint).toBe('More: the same command with --cursor 2, or --all.');
    expect(calls).toEqual([[undefined, 2]]);
  });

  it('with --all follows nextCursor to the end and answers every row with a null nextCursor', async () => {
    const { calls, page } = pagesOf(['a', 'b', 'c', 'd', 'e']);
    const services = { endpoints: { pageForAdmin: page } } as unknown as OperatorServices;
    const outcome = await execute({ name: 'endpoints list', paging: { limit: 2, all: true } }, services);
    expect(outcome.body).toEqual({ data: ['a', 'b', 'c', 'd', 'e'].map(endpoint), nextCursor: null });
    expect(outcome.hint).toBeUndefined();
    expect(calls).toEqual([
      [undefined, 2],
      ['2', 2],
      ['4', 2],
    ]);
  });
});

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../src/database/embedded-postgres.js';
import { createTestDatabase, dropTestDatabase } from '../support/database.js';
import { ROOT, Spawned, startGateway, waitFor } from '../support/processes.js';

const run = promisify(execFile);
const MARKER = '<!-- first-hour:';

/** The section's bash blocks, from its marker to the next `## ` heading, without their list indentation. */
async function firstHourBlocks(): Promise<string[]> {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  expect(readme.split(MARKER)).toHaveLength(2);
  const section = readme.slice(readme.indexOf(MARKER)).split(/^## /m)[0];
  return [...section.matchAll(/^( *)\x60\x60\x60bash\n([\s\S]*?)^\1\x60\x60\x60$/gm)].map(([, indent, body]) =>
    body
      .split('\n')
      .map((line) => line.slice(indent.length))
      .join('\n'),
  );
}

const json = (line: string) => JSON.parse(line) as Record<string, unknown> & { data: Array<Record<string, unknown>>; nextCursor: string | null };
/** The lines of one step's output that are JSON objects, parsed. */
const jsonLines = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map(json);
const statusLines = (output: string) => output.split('\n').filter((line) => line.startsWith('HTTP/1.1 '));

describe("the README's first hour, run as written", () => {
  let dir: string;
  let databaseUrl: string;
  let gateway: Spawned;
  let base: string;

  beforeAll(async () => {
    // The reader's directory: the gateway keeps its generated secrets in its .data, where the snippets read them.
    dir = await mkdtemp(join(tmpdir(), 'readme-first-hour-'));
    databaseUrl = await createTestDatabase();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    gateway = startGateway({
      DATA_DIR: join(dir, '.data'),
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN: '',
      BANK_WEBHOOK_SECRET: '',
    });
    await waitFor(
      async () => (await fetch(`${base}/health/ready`)).ok || (gateway.child.exitCode !== null && Promise.reject(new Error(gateway.output()))),
      'the gateway',
      90_000,
    );
  });
  afterAll(async () => {
    if (gateway?.child.exitCode === null) {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    }
    if (databaseUrl) await dropTestDatabase(databaseUrl);
    await rm(dir, { recursive: true, force: true });
  });

  it('issues a key, creates two documents, replays one, reads, pages to the end, follows the feed, signs a bank event and cancels', async () => {
    const blocks = await firstHourBlocks();
    expect(blocks).toHaveLength(7);
    for (const block of blocks) expect(block).toContain('http://localhost:3000');
    // One shell, as the reader's terminal: each block's output is told apart by a line of the test's own.
    const script = blocks.map((block, i) => `echo '::step ${i + 1}::'\n${block.replaceAll('http://localhost:3000', base)}`).join('\n');
    let stdout: string;
    try {
      ({ stdout } = await run('bash', ['-euo', 'pipefail', '-c', script], {
        cwd: dir,
        env: { PATH: `${dirname(process.execPath)}:${process.env.PATH}`, HOME: dir, LANG: 'C.UTF-8' },
        maxBuffer: 16 * 1024 * 1024,
      }));
    } catch (error) {
      const { stdout: out, stderr } = error as { stdout?: string; stderr?: string };
      throw new Error(`a first-hour block failed:\n${out}\n${stderr}`, { cause: error });
    }
    const steps = stdout.split(/^::step \d+::\n/m).slice(1);
    expect(steps).toHaveLength(7);
    const [issued, created, replayed, readAndPaged, feed, bank, cancelled] = steps;

    // 1. A key, printed once.
    expect(issued.trim()).toMatch(/^sk_tax_\S+$/);

    // 2. Two documents, each 201 with its Location.
    expect(statusLines(created)).toEqual(['HTTP/1.1 201 Created\r', 'HTTP/1.1 201 Created\r']);
    const documents = jsonLines(created);
    expect(documents.map((d) => [d.externalId, d.status])).toEqual([
      ['INV-2026-0001', 'PENDING_PAYMENT'],
      ['INV-2026-0002', 'PENDING_PAYMENT'],
    ]);
    const [first, second] = documents.map((d) => d.id as string);
    expect(created).toMatch(new RegExp(`^location: /api/v1/documents/${first}\\r$`, 'im'));

    // 3. The replay: the same status and Location, marked as one.
    expect(
      replayed
        .split('\n')
        .filter(Boolean)
        .map((line) => line.trimEnd().toLowerCase()),
    ).toEqual(['http/1.1 201 created', `location: /api/v1/documents/${first}`, 'idempotent-replayed: true']);

    // 4. The read, then every page down to the last, whose nextCursor is null: no page was refused.
    const [read, ...pages] = jsonLines(readAndPaged);
    expect([read.id, read.externalId]).toEqual([first, 'INV-2026-0001']);
    // A refused page (a 422 for cursor=null, say) is shown as it came.
    expect(pages.filter((page) => !Array.isArray(page.data))).toEqual([]);
    expect(pages.flatMap((page) => page.data.map((d) => d.externalId))).toEqual(['INV-2026-0002', 'INV-2026-0001']);
    expect(pages.at(-1)!.nextCursor).toBeNull();
    expect(pages.slice(0, -1).every((page) => typeof page.nextCursor === 'string')).toBe(true);

    // 5. The feed: both creations.
    const [events] = jsonLines(feed);
    expect(events.data.map((e) => [e.type, e.documentId])).toEqual([
      ['document.created', first],
      ['document.created', second],
    ]);

    // 6. The signed bank event is accepted and applied; the feed after the stored cursor has only its change.
    expect(statusLines(bank)).toEqual(['HTTP/1.1 200 OK\r']);
    const [received, since] = jsonLines(bank);
    expect(received).toEqual({ received: true });
    expect(since.data.map((e) => [e.type, e.documentId, e.status])).toEqual([['document.status_changed', first, 'PAID']]);

    // 7. The cancel, with its idempotency key.
    expect(statusLines(cancelled)).toEqual(['HTTP/1.1 200 OK\r']);
    expect(jsonLines(cancelled).map((d) => [d.id, d.status])).toEqual([[second, 'CANCELLED']]);

    // What the gateway now holds, asked apart from the snippets.
    const key = issued.trim();
    const stored = await Promise.all(
      [first, second].map(async (id) => (await (await fetch(`${base}/api/v1/documents/${id}`, { headers: { 'x-api-key': key } })).json()).status),
    );
    expect(stored).toEqual(['PAID', 'CANCELLED']);
  });
});

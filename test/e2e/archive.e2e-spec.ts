import { createHash, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { cancelDocument, documentBody, newSourceWithKey, postDocument, sendWebhook, signedWebhook, uniqueSource } from '../support/factories.js';
import { ROOT, spawnNode, waitFor } from '../support/processes.js';
import { GatewayClient, MemoryCheckpointStore } from '../../clients/typescript/src/index.js';
import { RetentionService } from '../../src/retention/retention.service.js';
import { holdInsert } from '../support/database.js';
import { adminHeaders } from '../support/factories.js';
import { startTestApp, TestApp, TEST_ARCHIVE_SIGNING_KEY, TEST_WEBHOOK_SECRET } from '../support/test-app.js';

/**
 * The archive (CONTRACT.md §6) tried from outside: the client endpoints through HTTP with the production
 * guards and pipes, and `tdg archive verify` / `export` as an operator runs them. Proofs are checked by a
 * verifier written here from RFC 9162 §2.1.3.2 and §2.1.4.2 and C2SP signed-note, not the gateway's own.
 */

const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
const leafOf = (entry: string) => sha256(Buffer.from([0]), Buffer.from(entry, 'utf8'));
const nodeOf = (left: Buffer, right: Buffer) => sha256(Buffer.from([1]), left, right);

/** RFC 9162 §2.1.3.2. */
function inclusionHolds(leaf: Buffer, index: number, size: number, proof: Buffer[], root: Buffer): boolean {
  if (index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeOf(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      r = nodeOf(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(root);
}

/** RFC 9162 §2.1.4.2. */
function consistencyHolds(first: number, second: number, proof: Buffer[], firstRoot: Buffer, secondRoot: Buffer): boolean {
  if (first === second) return proof.length === 0 && firstRoot.equals(secondRoot);
  if (proof.length === 0) return false;
  const path = (first & (first - 1)) === 0 ? [firstRoot, ...proof] : [...proof];
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0];
  let sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeOf(c, fr);
      sr = nodeOf(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      sr = nodeOf(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return fr.equals(firstRoot) && sr.equals(secondRoot) && sn === 0;
}

/** C2SP signed-note with an Ed25519 verifier key, and the tlog-checkpoint inside it. */
function openCheckpoint(note: string, verifierKey: string): { origin: string; size: number; root: Buffer } {
  const [name, keyIdHex, keyB64] = [verifierKey.split('+')[0], verifierKey.split('+')[1], verifierKey.split('+').slice(2).join('+')];
  const key = Buffer.from(keyB64, 'base64');
  expect(key[0]).toBe(1);
  const split = note.lastIndexOf('\n\n');
  const text = note.slice(0, split + 1);
  const signature = note
    .slice(split + 2)
    .split('\n')
    .filter(Boolean)
    .map((line) => /^— (\S+) (\S+)$/.exec(line)!)
    .find((m) => m[1] === name && Buffer.from(m[2], 'base64').subarray(0, 4).toString('hex') === keyIdHex);
  if (!signature) throw new Error('no signature by the key');
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: key.subarray(1).toString('base64url') }, format: 'jwk' });
  const ok = verify(null, Buffer.from(text), publicKey, Buffer.from(signature[2], 'base64').subarray(4));
  if (!ok) throw new Error('bad signature');
  const [origin, size, root] = text.split('\n');
  return { origin, size: Number(size), root: Buffer.from(root, 'base64') };
}

async function cli(args: string[], env: NodeJS.ProcessEnv) {
  const run = spawnNode([join(ROOT, 'dist', 'cli.js'), ...args], env);
  const code = await run.closed;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

interface ArchiveAnswer {
  checkpoint: string | null;
  entries: Array<{ index: number | null; entry: string; inclusionProof?: string[] }>;
}

describe('the archive: every feed event sealed, proven and verified', () => {
  let t: TestApp;
  let key: string;
  let source: string;
  let verifierKey: string;
  let env: NodeJS.ProcessEnv;
  let dir: string;
  /** A client that pinned the key and keeps the newest checkpoint it verified, as the TypeScript client's README shows. */
  let client: GatewayClient;

  const get = async <T>(url: string): Promise<{ status: number; body: T; text: string; type: string }> => {
    const response = await t.app.inject({ method: 'GET', url, headers: { 'x-api-key': key } });
    return {
      status: response.statusCode,
      body: (String(response.headers['content-type'] ?? '').includes('json') ? response.json() : undefined) as T,
      text: response.body,
      type: String(response.headers['content-type'] ?? ''),
    };
  };
  const archiveOf = async (id: string, treeSize?: number) =>
    (await get<ArchiveAnswer>(`/api/v1/documents/${id}/archive${treeSize ? `?treeSize=${treeSize}` : ''}`)).body;
  /** Waits until every event of `id` is sealed and a checkpoint covers it. */
  const sealedAndSigned = (id: string, events: number) =>
    waitFor(async () => {
      const answer = await archiveOf(id);
      return answer.entries.length === events && answer.entries.every((e) => e.inclusionProof) ? answer : undefined;
    }, `the ${events} events of ${id} sealed under a checkpoint`);

  beforeAll(async () => {
    t = await startTestApp({ env: { ARCHIVE_SEAL_INTERVAL: 'PT1S', ARCHIVE_CHECKPOINT_INTERVAL: 'PT1S', ARCHIVE_ORIGIN: 'gateway.test/archive' } });
    ({ key, source } = await newSourceWithKey(t.app));
    verifierKey = (await get<never>('/api/v1/archive/public-key')).text;
    env = { DATABASE_URL: t.databaseUrl, ARCHIVE_SIGNING_KEY: TEST_ARCHIVE_SIGNING_KEY, ARCHIVE_ORIGIN: 'gateway.test/archive', LOG_LEVEL: 'silent' };
    dir = await mkdtemp(join(tmpdir(), 'archive-e2e-'));
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    client = new GatewayClient({ baseUrl: await t.app.getUrl(), apiKey: key, archive: { verifierKey, store: new MemoryCheckpointStore() } });
  });
  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the verifier key and, before any entry, no checkpoint', async () => {
    expect(verifierKey).toMatch(/^gateway\.test\/archive\+[0-9a-f]{8}\+[A-Za-z0-9+/]+=*$/);
    // No document yet, so no feed event, no entry and no checkpoint.
    const checkpoint = await get<{ code: string }>('/api/v1/archive/checkpoint');
    expect(checkpoint.status).toBe(404);
    expect(checkpoint.body.code).toBe('NOT_FOUND');
  });

  it("seals a document's creation and changes, each with its document as the event left it, and proves them against a signed checkpoint", async () => {
    const created = await postDocument(t.app, key, documentBody(source, { providerReference: 'PAY-ARCHIVE-1', totalAmount: '119.00', taxAmount: '19.00' }));
    const document = created.json<{ id: string }>();
    expect(
      (
        await sendWebhook(
          t.app,
          signedWebhook(TEST_WEBHOOK_SECRET, {
            eventId: 'evt-arch-processing',
            eventType: 'PAYMENT_STATUS',
            status: 'PROCESSING',
            providerReference: 'PAY-ARCHIVE-1',
          }),
        )
      ).statusCode,
    ).toBe(200);
    expect(
      (
        await sendWebhook(
          t.app,
          signedWebhook(TEST_WEBHOOK_SECRET, { eventId: 'evt-arch-paid', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'PAY-ARCHIVE-1' }),
        )
      ).statusCode,
    ).toBe(200);

    const answer = await sealedAndSigned(document.id, 2);
    const checkpoint = openCheckpoint(answer.checkpoint!, verifierKey);
    expect(checkpoint.origin).toBe('gateway.test/archive');
    const [first, second] = answer.entries.map((e) => ({ ...e, parsed: JSON.parse(e.entry) }));
    expect(first.parsed).toMatchObject({
      index: first.index,
      bankEventId: null,
      event: { type: 'document.created', documentId: document.id, status: 'PENDING_PAYMENT' },
    });
    expect(first.parsed.document).toEqual({ ...created.json(), updatedAt: created.json<{ createdAt: string }>().createdAt });
    expect(second.parsed).toMatchObject({
      bankEventId: 'evt-arch-paid',
      event: { type: 'document.status_changed', status: 'PAID', previousStatus: 'PENDING_PAYMENT' },
    });
    expect(second.parsed.document).toEqual((await get(`/api/v1/documents/${document.id}`)).body);
    for (const entry of answer.entries) {
      expect(
        inclusionHolds(
          leafOf(entry.entry),
          entry.index!,
          checkpoint.size,
          entry.inclusionProof!.map((p) => Buffer.from(p, 'base64')),
          checkpoint.root,
        ),
      ).toBe(true);
    }
    // The entry is canonical JSON (RFC 8785): its keys in order, no spaces.
    expect(first.entry.startsWith('{"bankEventId":null,"document":{')).toBe(true);
  });

  it('lists an event not sealed yet with index null and no proof', async () => {
    // The sealer's next insert waits inside its transaction: the new event stays unsealed until released.
    const hold = await holdInsert(t.db, t.databaseUrl, 'archive_entries', 'true');
    let created: { id: string };
    try {
      created = (await postDocument(t.app, key, documentBody(source))).json<{ id: string }>();
      await hold.held();
      const answer = await archiveOf(created.id);
      expect(answer.entries).toHaveLength(1);
      expect(answer.entries[0].index).toBeNull();
      expect(answer.entries[0].inclusionProof).toBeUndefined();
      expect(JSON.parse(answer.entries[0].entry)).toMatchObject({ index: null, event: { type: 'document.created', documentId: created.id } });
    } finally {
      await hold.remove();
    }
    await sealedAndSigned(created.id, 1);
  });

  it('proves every newer checkpoint consistent with an older one', async () => {
    const old = openCheckpoint((await get<never>('/api/v1/archive/checkpoint')).text, verifierKey);
    const doc = (await postDocument(t.app, key, documentBody(source))).json<{ id: string }>();
    await sealedAndSigned(doc.id, 1);
    const latest = openCheckpoint((await get<never>('/api/v1/archive/checkpoint')).text, verifierKey);
    expect(latest.size).toBeGreaterThan(old.size);
    const { body } = await get<{ proof: string[] }>(`/api/v1/archive/consistency?from=${old.size}&to=${latest.size}`);
    expect(
      consistencyHolds(
        old.size,
        latest.size,
        body.proof.map((p) => Buffer.from(p, 'base64')),
        old.root,
        latest.root,
      ),
    ).toBe(true);
    // And a document's proofs against the older checkpoint, by its tree size.
    const earlier = await archiveOf(doc.id, old.size);
    expect(earlier.checkpoint).toContain(`\n${old.size}\n`);
    expect(earlier.entries.every((e) => e.inclusionProof === undefined)).toBe(true);
  });

  it("refuses bad parameters with the contract's errors and hides another source's documents", async () => {
    const bad = await get<{ code: string }>('/api/v1/archive/consistency?from=0&to=1');
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('VALIDATION_ERROR');
    expect((await get<{ code: string }>('/api/v1/archive/consistency?from=5&to=2')).status).toBe(422);
    expect((await get<{ code: string }>('/api/v1/archive/consistency?from=1&to=999999999')).status).toBe(422);
    const other = await newSourceWithKey(t.app, uniqueSource('other'));
    const theirs = (await postDocument(t.app, other.key, documentBody(other.source))).json<{ id: string }>();
    expect((await get<{ code: string }>(`/api/v1/documents/${theirs.id}/archive`)).status).toBe(404);
    expect((await get<{ code: string }>(`/api/v1/documents/not-a-uuid/archive`)).status).toBe(404);
    expect((await get<{ code: string }>(`/api/v1/documents/${theirs.id}/archive?treeSize=abc`)).status).toBe(422);
  });

  it('refuses UPDATE, DELETE and TRUNCATE on the archive tables', async () => {
    for (const statement of [
      'UPDATE archive_entries SET entry = entry',
      'DELETE FROM archive_nodes',
      'TRUNCATE archive_checkpoints',
      'DELETE FROM archive_verifications',
    ]) {
      await expect(t.db.query(statement)).rejects.toThrow(/append-only/);
    }
  });

  it('reports a kept checkpoint that no longer verifies, and keeps it as evidence', async () => {
    const document = (await postDocument(t.app, key, documentBody(source))).json<{ id: string }>();
    await sealedAndSigned(document.id, 1);
    const latest = (await get<never>('/api/v1/archive/checkpoint')).text;
    const forged = forgeNote(latest);
    const store = new MemoryCheckpointStore(forged);
    const wary = new GatewayClient({ baseUrl: await t.app.getUrl(), apiKey: key, archive: { verifierKey, store } });
    const seen = await wary.archive!.verifyDocument(document.id);
    expect(seen.ok).toBe(false);
    expect(seen.checkpointChange).toMatchObject({ ok: false, problem: 'inconsistent' });
    expect(await store.load()).toBe(forged);
  });

  it('holds the feed purge back while an event past RETENTION_EVENTS is not sealed, and purges it once it is', async () => {
    const document = (await postDocument(t.app, key, documentBody(source))).json<{ id: string }>();
    await sealedAndSigned(document.id, 1);
    const hold = await holdInsert(t.db, t.databaseUrl, 'archive_entries', 'true');
    let old: string;
    try {
      // The sealer's next seal waits inside its transaction; an event 100 days old arrives meanwhile.
      [{ id: old }] = (
        await t.db.query<{ id: string }>(
          `INSERT INTO document_events (source, document_id, type, status, previous_status, created_at) VALUES ($1, $2, 'document.status_changed', 'CANCELLED', 'PENDING_PAYMENT', now() - interval '100 days') RETURNING id::text`,
          [source, document.id],
        )
      ).rows;
      await hold.held();
      await t.app.get(RetentionService).run();
      expect((await t.db.query('SELECT 1 FROM document_events WHERE id = $1', [old])).rowCount).toBe(1);
      expect(t.logs()).toContain('Retention purge held back: feed events past RETENTION_EVENTS are not sealed into the archive yet');
    } finally {
      await hold.remove();
    }
    await waitFor(async () => (await t.db.query('SELECT 1 FROM archive_entries WHERE event_id = $1', [old])).rowCount === 1, 'the old event sealed');
    // The document as that event left it, so that the checks below find the archive as the gateway keeps it.
    await t.db.query(`UPDATE documents d SET status = 'CANCELLED', updated_at = e.created_at FROM document_events e WHERE d.id = $1 AND e.id = $2`, [
      document.id,
      old,
    ]);
    await t.app.get(RetentionService).run();
    expect((await t.db.query('SELECT 1 FROM document_events WHERE id = $1', [old])).rowCount).toBe(0);
    // The archive keeps its entry: retention never touches it.
    expect((await t.db.query('SELECT 1 FROM archive_entries WHERE event_id = $1', [old])).rowCount).toBe(1);
  });

  describe('tdg archive verify', () => {
    let doc: { id: string };

    beforeAll(async () => {
      doc = (await postDocument(t.app, key, documentBody(source, { providerReference: 'PAY-TAMPER' }))).json<{ id: string }>();
      await sendWebhook(
        t.app,
        signedWebhook(TEST_WEBHOOK_SECRET, { eventId: 'evt-tamper-failed', eventType: 'PAYMENT_STATUS', status: 'FAILED', providerReference: 'PAY-TAMPER' }),
      );
      await cancelDocument(t.app, key, doc.id);
      await sealedAndSigned(doc.id, 3);
    });

    const verifyOnce = () => cli(['archive', 'verify', '--json'], env);
    /** Runs the verifier until the change made is found (the sealer may still be sealing what came before it). */
    const findings = async (kind: string) =>
      waitFor(async () => {
        const run = await verifyOnce();
        const report = JSON.parse(run.stdout) as { findings: Array<{ kind: string; documentId: string | null; index: number | null }> };
        return report.findings.some((f) => f.kind === kind) ? { run, report } : undefined;
      }, `a ${kind} finding`);
    /** Runs `change` with the archive's triggers off: what only the tables' owner could do. */
    const asOwner = async (change: (db: Client) => Promise<unknown>) => {
      await t.db.query(
        'ALTER TABLE archive_entries DISABLE TRIGGER USER; ALTER TABLE archive_nodes DISABLE TRIGGER USER; ALTER TABLE archive_checkpoints DISABLE TRIGGER USER',
      );
      try {
        await change(t.db);
      } finally {
        await t.db.query(
          'ALTER TABLE archive_entries ENABLE TRIGGER USER; ALTER TABLE archive_nodes ENABLE TRIGGER USER; ALTER TABLE archive_checkpoints ENABLE TRIGGER USER',
        );
      }
    };

    it('finds nothing in an archive nobody changed, and records the run', async () => {
      const run = await waitFor(async () => {
        const attempt = await verifyOnce();
        return attempt.code === 0 ? attempt : undefined;
      }, 'a clean verification');
      const report = JSON.parse(run.stdout) as { treeSize: number; checkpoints: number; findings: unknown[] };
      expect(report.findings).toEqual([]);
      expect(report.treeSize).toBeGreaterThan(0);
    });

    it('names a document whose amount was changed by SQL, and exits 6', async () => {
      await t.db.query(`UPDATE documents SET total_amount = '1190.00' WHERE id = $1`, [doc.id]);
      try {
        const { run, report } = await findings('document_changed');
        expect(run.code).toBe(6);
        expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'document_changed', documentId: doc.id }));
        const seen = await client.archive!.verifyDocument(doc.id);
        expect(seen.ok).toBe(false);
        expect(seen.findings.map((f) => f.problem)).toContain('the document the API shows differs from its latest archive entry');
        const text = await cli(['archive', 'verify'], env);
        expect(text.code).toBe(6);
        expect(text.stdout).toMatch(new RegExp(`document_changed document ${doc.id} entry \\d+: .*totalAmount`));
      } finally {
        await t.db.query(`UPDATE documents SET total_amount = '119.00' WHERE id = $1`, [doc.id]);
      }
    });

    it('names a feed event deleted by SQL', async () => {
      const [{ id }] = (await t.db.query<{ id: string }>(`SELECT id::text FROM document_events WHERE document_id = $1 AND status = 'CANCELLED'`, [doc.id]))
        .rows;
      const [row] = (await t.db.query(`SELECT * FROM document_events WHERE id = $1`, [id])).rows as Array<Record<string, unknown>>;
      await t.db.query(`DELETE FROM document_events WHERE id = $1`, [id]);
      try {
        const { report } = await findings('feed_event_deleted');
        expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'feed_event_deleted', documentId: doc.id }));
        const feed = await client.archive!.verifyFeed();
        expect(feed.findings).toContainEqual({ documentId: doc.id, problem: `event ${id} is sealed in the archive and gone from the feed` });
      } finally {
        await t.db.query(
          `INSERT INTO document_events (id, source, document_id, type, status, previous_status, created_at, trace_parent, bank_event_id, xid) OVERRIDING SYSTEM VALUE VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)`,
          [row.id, row.source, row.document_id, row.type, row.status, row.previous_status, row.created_at, row.trace_parent, row.bank_event_id, row.xid],
        );
      }
    });

    it('names an event inserted by SQL behind the sealer', async () => {
      const [{ xid }] = (await t.db.query<{ xid: string }>(`SELECT min(xid)::text AS xid FROM document_events`)).rows;
      // Backdated into the feed's past: the sealer has passed that position, so no entry will ever take it.
      await t.db.query(
        `INSERT INTO document_events (source, document_id, type, status, previous_status, created_at, xid) VALUES ($1, $2, 'document.status_changed', 'REFUNDED', 'CANCELLED', now() - interval '1 hour', $3::xid8)`,
        [source, doc.id, xid],
      );
      try {
        const { report } = await findings('feed_event_unsealed');
        expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'feed_event_unsealed', documentId: doc.id }));
        // Its entry-to-be says REFUNDED; the document, untouched, is not.
        const seen = await client.archive!.verifyDocument(doc.id);
        expect(seen.findings.map((f) => f.problem)).toContain('the document the API shows differs from its latest archive entry');
      } finally {
        await t.db.query(`DELETE FROM document_events WHERE document_id = $1 AND status = 'REFUNDED'`, [doc.id]);
      }
    });

    it('names a stored entry edited, and two entries swapped', async () => {
      const entries = (
        await t.db.query<{ index: string; entry: string }>(
          `SELECT e.index::text AS index, e.entry FROM archive_entries e WHERE e.document_id = $1 ORDER BY e.index`,
          [doc.id],
        )
      ).rows;
      await asOwner((db) =>
        db.query(`UPDATE archive_entries SET entry = replace(entry, '"totalAmount":"119.00"', '"totalAmount":"11.90"') WHERE index = $1`, [entries[0].index]),
      );
      try {
        const { report } = await findings('leaf_hash_changed');
        expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'leaf_hash_changed', index: Number(entries[0].index) }));
        expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'checkpoint_root' }));
        const seen = await client.archive!.verifyDocument(doc.id);
        expect(seen.ok).toBe(false);
        expect(seen.findings.some((f) => f.index === Number(entries[0].index))).toBe(true);
      } finally {
        await asOwner((db) => db.query(`UPDATE archive_entries SET entry = $2 WHERE index = $1`, [entries[0].index, entries[0].entry]));
      }
      const [a, b] = entries;
      await asOwner(async (db) => {
        await db.query(`UPDATE archive_entries SET entry = $2 WHERE index = $1`, [a.index, b.entry]);
        await db.query(`UPDATE archive_entries SET entry = $2 WHERE index = $1`, [b.index, a.entry]);
      });
      try {
        const { report } = await findings('entry_out_of_place');
        expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'entry_out_of_place', index: Number(a.index) }));
        expect((await client.archive!.verifyDocument(doc.id)).ok).toBe(false);
      } finally {
        await asOwner(async (db) => {
          await db.query(`UPDATE archive_entries SET entry = $2 WHERE index = $1`, [a.index, a.entry]);
          await db.query(`UPDATE archive_entries SET entry = $2 WHERE index = $1`, [b.index, b.entry]);
        });
      }
    });

    it("names an entry moved to another document by its column, out of that document's archive answer", async () => {
      const [{ index }] = (await t.db.query<{ index: string }>(`SELECT max(index)::text AS index FROM archive_entries WHERE document_id = $1`, [doc.id])).rows;
      const other = '00000000-0000-4000-8000-000000000000';
      await asOwner((db) => db.query(`UPDATE archive_entries SET document_id = $2 WHERE index = $1`, [index, other]));
      try {
        expect((await archiveOf(doc.id)).entries.map((e) => e.index)).not.toContain(Number(index));
        const { report } = await findings('entry_malformed');
        expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'entry_malformed', documentId: doc.id, index: Number(index) }));
      } finally {
        await asOwner((db) => db.query(`UPDATE archive_entries SET document_id = $2 WHERE index = $1`, [index, doc.id]));
      }
    });

    it('names a checkpoint replaced by one signed with another key', async () => {
      // Once the latest checkpoint covers every entry, it stays the latest: the one the client is answered with.
      await waitFor(async () => {
        const [row] = (
          await t.db.query<{ signed: number; entries: number }>(
            'SELECT (SELECT max(tree_size) FROM archive_checkpoints)::int AS signed, (SELECT count(*) FROM archive_entries)::int AS entries',
          )
        ).rows;
        return row.signed === row.entries;
      }, 'every entry under the latest checkpoint');
      const [latest] = (
        await t.db.query<{ tree_size: string; note: string }>(
          `SELECT c.tree_size::text AS tree_size, c.note FROM archive_checkpoints c ORDER BY c.tree_size DESC LIMIT 1`,
        )
      ).rows;
      const forged = forgeNote(latest.note);
      await asOwner((db) => db.query(`UPDATE archive_checkpoints SET note = $2 WHERE tree_size = $1`, [latest.tree_size, forged]));
      try {
        const { report } = await findings('checkpoint_signature');
        expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'checkpoint_signature' }));
        const seen = await client.archive!.verifyDocument(doc.id);
        expect(seen.ok).toBe(false);
        expect(seen.checkpoint).toBeNull();
      } finally {
        await asOwner((db) => db.query(`UPDATE archive_checkpoints SET note = $2 WHERE tree_size = $1`, [latest.tree_size, latest.note]));
      }
    });

    it('exports the archive into one file that verify --file checks with no database, and catches an edit in it', async () => {
      const file = join(dir, 'archive.jsonl');
      const exported = await cli(['archive', 'export', file, '--json'], env);
      expect(exported.code).toBe(0);
      // Never over an existing file, and refused as a usage error, not a crash.
      const again = await cli(['archive', 'export', file], env);
      expect(again.code).toBe(2);
      expect(again.stderr).toContain('exists already');
      expect(again.stderr).not.toMatch(/^\s+at /m);
      const offline = await cli(['archive', 'verify', '--file', file, '--key', verifierKey, '--json'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
      expect(offline.code).toBe(0);
      expect(JSON.parse(offline.stdout)).toMatchObject({ findings: [] });
      const edited = join(dir, 'edited.jsonl');
      await writeFile(edited, (await readFile(file, 'utf8')).replace('\\"taxAmount\\":\\"19.00\\"', '\\"taxAmount\\":\\"1.90\\"'));
      const caught = await cli(['archive', 'verify', '--file', edited, '--key', verifierKey], {});
      expect(caught.code).toBe(6);
      expect(caught.stdout).toMatch(/checkpoint_root/);
      const otherKey = await cli(['archive', 'verify', '--file', file, '--key', forgeKey()], {});
      expect(otherKey.code).toBe(6);
    });

    it('shows the administrators the archive, and counts the failed verification runs in /metrics', async () => {
      const status = await t.app.inject({ method: 'GET', url: '/admin/archive', headers: adminHeaders });
      expect(status.statusCode).toBe(200);
      const body = status.json<{
        treeSize: number;
        sealLagSeconds: number;
        checkpoint: { treeSize: number; note: string };
        lastVerification: { findingCount: number };
      }>();
      expect(body.treeSize).toBeGreaterThan(0);
      expect(body.checkpoint.note).toContain(`\n${body.checkpoint.treeSize}\n`);
      expect(body.lastVerification).toEqual(expect.objectContaining({ findingCount: expect.any(Number) }));
      const metrics = await waitFor(async () => {
        const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
        return /^archive_verification_failures_total [1-9]/m.test(text) ? text : undefined;
      }, 'the failed runs counted');
      expect(metrics).toMatch(/^archive_tree_size [1-9]\d*$/m);
      expect(metrics).toMatch(/^archive_entries_total [1-9]\d*$/m);
      expect(metrics).toMatch(/^archive_seal_lag_seconds /m);
    });

    it('catches a whole log rebuilt and signed again with the key, by a client and by a run that kept its last checkpoint', async () => {
      const state = join(dir, 'verified-checkpoint');
      const clean = await waitFor(async () => {
        const run = await cli(['archive', 'verify', '--state', state], env);
        return run.code === 0 ? run : undefined;
      }, 'a clean run that keeps its checkpoint');
      expect(clean.stdout).toContain('No alteration found.');
      expect(await readFile(state, 'utf8')).toContain('— gateway.test/archive ');
      expect((await client.archive!.verifyDocument(doc.id)).ok).toBe(true);
      const [{ size: before }] = (await t.db.query<{ size: number }>('SELECT count(*)::int AS size FROM document_events')).rows;
      // Someone with the database and the key: the archive emptied, a document changed, and the sealer left to seal and sign it all again.
      await asOwner((db) => db.query('DELETE FROM archive_entries; DELETE FROM archive_nodes; DELETE FROM archive_checkpoints'));
      await t.db.query(`UPDATE documents SET tax_amount = '0.00' WHERE id = $1`, [doc.id]);
      await waitFor(async () => {
        const [{ size }] = (await t.db.query<{ size: number }>('SELECT coalesce(max(tree_size), 0)::int AS size FROM archive_checkpoints')).rows;
        return size >= before;
      }, 'the rebuilt log signed');
      const seen = await client.archive!.verifyDocument(doc.id);
      expect(seen.ok).toBe(false);
      expect(seen.checkpointChange).toEqual(expect.objectContaining({ ok: false }));
      const rerun = await cli(['archive', 'verify', '--state', state, '--json'], env);
      expect(rerun.code).toBe(6);
      expect(JSON.parse(rerun.stdout).findings).toContainEqual(expect.objectContaining({ kind: 'log_rewritten' }));
    });

    // Last: the changed row stays sealed in its entry, so every run after this one finds it.
    it('names an amount changed by SQL that a later, legitimate change sealed into its entry', async () => {
      const laundered = (await postDocument(t.app, key, documentBody(source, { providerReference: 'PAY-LAUNDER' }))).json<{ id: string }>();
      await sealedAndSigned(laundered.id, 1);
      await t.db.query(`UPDATE documents SET total_amount = '1190.00' WHERE id = $1`, [laundered.id]);
      // The bank's payment is real: its entry takes the row as it is now, so the row matches its latest entry.
      await sendWebhook(
        t.app,
        signedWebhook(TEST_WEBHOOK_SECRET, { eventId: 'evt-launder-paid', eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: 'PAY-LAUNDER' }),
      );
      const answer = await sealedAndSigned(laundered.id, 2);
      expect(JSON.parse(answer.entries[1].entry)).toMatchObject({ document: { totalAmount: '1190.00', status: 'PAID' } });
      const { run, report } = await findings('document_changed');
      expect(run.code).toBe(6);
      expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'document_changed', documentId: laundered.id, index: answer.entries[1].index }));
      const seen = await client.archive!.verifyDocument(laundered.id);
      expect(seen.ok).toBe(false);
      expect(seen.findings).toContainEqual(expect.objectContaining({ index: answer.entries[1].index, problem: expect.stringContaining('the entry before') }));
    });

    it('names a log cut short: its last entry removed with the feed event and the change it sealed', async () => {
      const cut = (await postDocument(t.app, key, documentBody(source, { providerReference: 'PAY-CUT' }))).json<{ id: string }>();
      await cancelDocument(t.app, key, cut.id);
      const answer = await sealedAndSigned(cut.id, 2);
      const last = answer.entries[1].index!;
      const [{ size }] = (await t.db.query<{ size: number }>('SELECT count(*)::int AS size FROM archive_entries')).rows;
      expect(size).toBe(last + 1);
      // Everything the cancel left, gone: its entry and the tree nodes it completed, its feed event, the row's change.
      await asOwner((db) =>
        db.query(
          'DELETE FROM archive_entries WHERE index = $1; DELETE FROM archive_nodes WHERE index = ($1::bigint >> level) AND ($1::bigint + 1) % (1::bigint << level) = 0'.replaceAll(
            '$1',
            String(last),
          ),
        ),
      );
      await t.db.query(`DELETE FROM document_events WHERE document_id = $1 AND status = 'CANCELLED'`, [cut.id]);
      await t.db.query(`UPDATE documents SET status = 'PENDING_PAYMENT', updated_at = created_at WHERE id = $1`, [cut.id]);
      const { run, report } = await findings('checkpoint_beyond_entries');
      expect(run.code).toBe(6);
      expect(report.findings).toContainEqual(expect.objectContaining({ kind: 'checkpoint_beyond_entries', detail: expect.stringContaining(`(${last} are)`) }));
    });
  });
});

/** The same checkpoint text signed by a key that is not the archive's, under the archive's name. */
function forgeNote(note: string): string {
  const split = note.lastIndexOf('\n\n');
  const text = note.slice(0, split + 1);
  const name = /^— (\S+) /m.exec(note.slice(split + 2))![1];
  const { privateKey } = generateKeyPairSync('ed25519');
  const signature = sign(null, Buffer.from(text), privateKey);
  const keyId = Buffer.from(/^— \S+ (\S+)$/m.exec(note.slice(split + 2))![1], 'base64').subarray(0, 4);
  return `${text}\n— ${name} ${Buffer.concat([keyId, signature]).toString('base64')}\n`;
}

function forgeKey(): string {
  const { publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  const name = 'gateway.test/archive';
  const keyId = createHash('sha256')
    .update(Buffer.concat([Buffer.from(`${name}\n`), Buffer.from([1]), raw]))
    .digest()
    .subarray(0, 4);
  return `${name}+${keyId.toString('hex')}+${Buffer.concat([Buffer.from([1]), raw]).toString('base64')}`;
}

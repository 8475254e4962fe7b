import { generateKeyPairSync } from 'node:crypto';
import { ArchiveCheck } from './archive-check.js';
import { entryText } from './archive-entry.js';
import { leafHash, nodeHash } from './merkle.js';
import { checkpointText, noteSigner } from './signed-note.js';

const signer = noteSigner('gateway.test/archive', generateKeyPairSync('ed25519').privateKey);
const stranger = noteSigner('gateway.test/archive', generateKeyPairSync('ed25519').privateKey);

/** A document's life as entries: created, then paid by a bank event. */
function entries(documentId = '2b0f4c1e-7d3a-4f5b-9c8e-1a2b3c4d5e6f'): string[] {
  const document = { id: documentId, status: 'PENDING_PAYMENT', totalAmount: '119.00' } as never;
  const created = {
    id: '1',
    type: 'document.created',
    documentId,
    status: 'PENDING_PAYMENT',
    previousStatus: null,
    createdAt: '2026-12-01T10:00:00.000Z',
  } as const;
  const paid = {
    id: '2',
    type: 'document.status_changed',
    documentId,
    status: 'PAID',
    previousStatus: 'PENDING_PAYMENT',
    createdAt: '2026-12-01T10:01:00.000Z',
  } as const;
  return [
    entryText({ index: 0, event: created, document, bankEventId: null }),
    entryText({ index: 1, event: paid, document: { ...(document as object), status: 'PAID' } as never, bankEventId: 'evt-1' }),
  ];
}

const rootOf = (texts: string[]) => (texts.length === 1 ? leafHash(texts[0]) : nodeHash(leafHash(texts[0]), leafHash(texts[1])));
const checkpointOf = (texts: string[], by = signer) => by.sign(checkpointText({ origin: by.name, size: texts.length, rootHash: rootOf(texts) }));

function run(texts: string[], checkpoints: Map<number, string>, kept?: string): ArchiveCheck {
  const check = new ArchiveCheck(signer.verifierKey);
  if (kept) check.expectTree(kept);
  texts.forEach((text, index) => {
    check.entry(index, text, leafHash(text));
    const note = checkpoints.get(index + 1);
    if (note) check.checkpoint(index + 1, note);
  });
  check.finish();
  return check;
}

describe('ArchiveCheck: entries, tree and checkpoints in one pass', () => {
  it('finds nothing in an archive as the sealer writes it, and keeps its newest checkpoint', () => {
    const texts = entries();
    const check = run(
      texts,
      new Map([
        [1, checkpointOf(texts.slice(0, 1))],
        [2, checkpointOf(texts)],
      ]),
    );
    expect(check.findings).toEqual([]);
    expect(check.newestVerified).toBe(checkpointOf(texts));
  });

  it('names an edited entry by its stored leaf, by the entry before it and by the checkpoint it no longer matches', () => {
    const texts = entries();
    const signed = new Map([[2, checkpointOf(texts)]]);
    const check = new ArchiveCheck(signer.verifierKey);
    const edited = texts[1].replace('"totalAmount":"119.00"', '"totalAmount":"11.90"');
    check.entry(0, texts[0], leafHash(texts[0]));
    check.entry(1, edited, leafHash(texts[1]));
    check.checkpoint(2, signed.get(2)!);
    expect(check.findings.map((f) => [f.kind, f.index])).toEqual([
      ['leaf_hash_changed', 1],
      ['document_changed', 1],
      ['checkpoint_root', null],
    ]);
  });

  it('names two entries swapped and a history out of order, but takes a history that begins with a change (older than the archive)', () => {
    const [created, paid] = entries();
    const check = run([paid, created], new Map());
    expect(check.findings.map((f) => f.kind)).toEqual(['entry_out_of_place', 'entry_out_of_place', 'history_broken']);
    const alone = paid.replace('"index":1', '"index":0');
    expect(run([alone], new Map()).findings).toEqual([]);
  });

  it('names a row changed by hand between two entries, once a later change seals the changed row', () => {
    const [created, paid] = entries();
    const laundered = paid.replace('"totalAmount":"119.00"', '"totalAmount":"11.90"');
    expect(run([created, laundered], new Map()).findings.map((f) => [f.kind, f.index])).toEqual([['document_changed', 1]]);
  });

  it('names a checkpoint signed by another key, and one that claims entries that are not there', () => {
    const texts = entries();
    expect(run(texts, new Map([[2, checkpointOf(texts, stranger)]])).findings.map((f) => f.kind)).toEqual(['checkpoint_signature']);
    const check = run(texts.slice(0, 1), new Map());
    check.checkpoint(2, checkpointOf(texts));
    expect(check.findings.map((f) => f.kind)).toEqual(['checkpoint_beyond_entries']);
  });

  it('names a log rebuilt after a checkpoint was kept: changed under it, or shorter than it', () => {
    const texts = entries();
    const kept = checkpointOf(texts);
    expect(run(texts, new Map(), kept).findings).toEqual([]);
    const rebuilt = [texts[0], texts[1].replace('"evt-1"', '"evt-2"')];
    expect(run(rebuilt, new Map([[2, checkpointOf(rebuilt)]]), kept).findings.map((f) => f.kind)).toEqual(['log_rewritten']);
    expect(run(texts.slice(0, 1), new Map(), kept).findings.map((f) => f.kind)).toEqual(['log_rewritten']);
  });
});

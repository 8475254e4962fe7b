import canonicalize from 'canonicalize';
import { createHash } from 'node:crypto';
import { unchangingPart } from '../documents/document-history.js';
import { ArchiveEntry, parseEntry } from './archive-entry.js';
import { EMPTY_ROOT, leafHash, nodeHash } from './merkle.js';
import { openNote, parseCheckpoint } from './signed-note.js';

/** One thing the verifier found wrong, named by document and entry where it has them. */
export interface Finding {
  kind:
    | 'entry_malformed'
    | 'entry_out_of_place'
    | 'leaf_hash_changed'
    | 'history_broken'
    | 'checkpoint_signature'
    | 'checkpoint_root'
    | 'checkpoint_beyond_entries'
    | 'log_rewritten'
    | 'feed_event_changed'
    | 'feed_event_deleted'
    | 'feed_event_unsealed'
    | 'document_changed'
    | 'document_unsealed';
  documentId: string | null;
  index: number | null;
  detail: string;
}

/**
 * The checks that need only the entries and checkpoints, as one pass: used on the database and on an
 * export file alike. Entries go in in order (`entry`), each checkpoint as soon as the entries reach its
 * tree size (`checkpoint`; one beyond the last entry at the end). It keeps the tree's right edge (O(log n)
 * hashes) and per document only its last status and a digest of what no event changes: memory grows with
 * documents, not entries.
 */
export class ArchiveCheck {
  readonly findings: Finding[] = [];
  private readonly edge: Array<{ level: number; hash: Buffer }> = [];
  private readonly lastOf = new Map<string, { status: string; unchanging: string }>();
  private size = 0;
  private previous: { size: number; rootHash: Buffer } | null = null;
  /** When the first entry's event was written: a document unchanged since before then predates the archive. */
  firstEventAt: number | null = null;
  /** The newest checkpoint that verified: what a scheduled run keeps for the next (`tdg archive verify --state`). */
  newestVerified: string | null = null;

  constructor(private readonly verifierKey: string) {}

  /**
   * A checkpoint verified by an earlier run (or a client): the log must still hold that tree. A log rebuilt
   * and signed again, with the key, is consistent with itself; only a checkpoint kept outside it shows it.
   */
  expectTree(note: string): void {
    const opened = openNote(note, this.verifierKey);
    const checkpoint = opened.ok ? parseCheckpoint(opened.text) : null;
    if (!checkpoint) this.find('checkpoint_signature', null, null, 'the checkpoint kept from an earlier verification is not signed by the archive key');
    else if (checkpoint.size > 0) this.previous = { size: checkpoint.size, rootHash: checkpoint.rootHash };
  }

  /** The end of the entries: a kept tree larger than the log means the log lost entries. */
  finish(): void {
    if (this.previous && this.size < this.previous.size) {
      this.find('log_rewritten', null, null, `the log has ${this.size} entries, fewer than the ${this.previous.size} of a checkpoint verified before`);
    }
  }

  /** The next stored entry, at `index`; `storedLeaf` is the leaf hash the database keeps for it (none in an export). Answers the parsed entry, if any. */
  entry(index: number, text: string, storedLeaf?: Buffer): ArchiveEntry | null {
    if (index !== this.size) this.find('entry_out_of_place', null, this.size, `entry ${index} follows entry ${this.size - 1}: entries are missing`);
    const leaf = leafHash(text);
    if (storedLeaf && !storedLeaf.equals(leaf)) this.find('leaf_hash_changed', null, index, 'the stored entry does not hash to the leaf stored for it');
    this.push(leaf);
    const entry = parseEntry(text);
    if (!entry) {
      this.find('entry_malformed', null, index, 'not an entry in canonical JSON');
      return null;
    }
    const documentId = entry.document.id ?? null;
    if (entry.index !== index) this.find('entry_out_of_place', documentId, index, `the entry says it is entry ${String(entry.index)}`);
    if (entry.event.documentId !== entry.document.id) this.find('history_broken', documentId, index, "the event is about another document than the entry's");
    this.followHistory(entry, index);
    return entry;
  }

  /** A stored checkpoint: its signature, and its root against the entries'. */
  checkpoint(treeSize: number, note: string): void {
    const opened = openNote(note, this.verifierKey);
    if (!opened.ok) {
      this.find('checkpoint_signature', null, null, `the checkpoint of tree size ${treeSize} is not signed by the archive's key (${opened.reason})`);
      return;
    }
    const checkpoint = parseCheckpoint(opened.text);
    if (!checkpoint || checkpoint.size !== treeSize) {
      this.find('checkpoint_signature', null, null, `the checkpoint stored for tree size ${treeSize} is not a checkpoint of that size`);
      return;
    }
    if (treeSize > this.size) {
      this.find('checkpoint_beyond_entries', null, null, `the checkpoint of tree size ${treeSize} covers entries that are not stored (${this.size} are)`);
      return;
    }
    if (treeSize < this.size) throw new Error(`The checkpoint of tree size ${treeSize} came after entry ${this.size - 1}`);
    if (!this.root().equals(checkpoint.rootHash)) {
      // Every checkpoint's root recomputed from the same entries: two that match are consistent with each other.
      this.find(
        'checkpoint_root',
        null,
        null,
        `the entries no longer hash to the root signed at tree size ${treeSize}: entries before ${treeSize} were changed`,
      );
    } else if (this.findings.length === 0) {
      this.newestVerified = note;
    }
  }

  get treeSize(): number {
    return this.size;
  }

  find(kind: Finding['kind'], documentId: string | null, index: number | null, detail: string): void {
    this.findings.push({ kind, documentId, index, detail });
  }

  /** The tree's right edge as perfect subtrees, merged as they complete (RFC 9162's MTH, built leaf by leaf). */
  private push(leaf: Buffer): void {
    let node = { level: 0, hash: leaf };
    while (this.edge.length > 0 && this.edge[this.edge.length - 1].level === node.level) {
      const left = this.edge.pop()!;
      node = { level: node.level + 1, hash: nodeHash(left.hash, node.hash) };
    }
    this.edge.push(node);
    this.size++;
    if (this.previous?.size === this.size && !this.root().equals(this.previous.rootHash)) {
      this.find('log_rewritten', null, null, `the first ${this.size} entries are not the tree of a checkpoint verified before: the log was rewritten`);
    }
  }

  /** MTH of the entries so far: the right edge folded from the right, as merkle.ts's rangeHash does. */
  private root(): Buffer {
    if (this.edge.length === 0) return EMPTY_ROOT;
    let root = this.edge[this.edge.length - 1].hash;
    for (let i = this.edge.length - 2; i >= 0; i--) root = nodeHash(this.edge[i].hash, root);
    return root;
  }

  /**
   * Each document's entries must tell its history: created first, then each change from the status before
   * it, with everything but the status and the payment as it was. A document whose first entry is a change
   * was created before the archive began (its creation's feed event purged before it was sealed): its
   * history starts there. Entries are contiguous and in the tree, so an entry cannot go missing from inside
   * one, and a row changed by hand between two of its entries shows in the later one.
   */
  private followHistory(entry: ArchiveEntry, index: number): void {
    const { event, document } = entry;
    this.firstEventAt ??= Date.parse(event.createdAt);
    const before = this.lastOf.get(document.id);
    const follows = event.type === 'document.created' ? before === undefined : before === undefined || before.status === event.previousStatus;
    if (!follows) {
      this.find(
        'history_broken',
        document.id,
        index,
        `a ${event.type} event from ${String(event.previousStatus)} follows status ${String(before?.status ?? 'none')}`,
      );
    }
    if (document.status !== event.status) this.find('history_broken', document.id, index, "the entry's document is not in the status of its event");
    const unchanging = digestOf(unchangingPart(document));
    if (before && before.unchanging !== unchanging) {
      this.find('document_changed', document.id, index, 'fields no event changes differ from the entry before: the row was changed between the two');
    }
    this.lastOf.set(document.id, { status: event.status, unchanging });
  }
}

/** A short digest of a JSON value's canonical form: what the verifier keeps of each feed event while it walks. */
export function digestOf(value: unknown): string {
  return createHash('sha256')
    .update(canonicalize(value) ?? '')
    .digest('base64url')
    .slice(0, 22);
}

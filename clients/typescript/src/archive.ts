import {
  checkNewCheckpoint,
  CheckpointChange,
  CheckpointStore,
  decodeProof,
  DocumentArchive,
  DocumentArchiveVerification,
  canonicalJson,
  MemoryCheckpointStore,
  openCheckpoint,
  verifyDocumentArchive,
} from './archive-proofs';
import type { Events } from './events';
import type { CallOptions, Transport } from './transport';

export interface ArchiveOptions {
  /** The gateway's note verifier key (`GET /api/v1/archive/public-key`), pinned out of band. */
  verifierKey: string;
  /** Where the newest verified checkpoint is kept between runs. Default: in memory, for this process only. */
  store?: CheckpointStore;
}

/** What `verifyDocument` found: the proofs, the checkpoint's place in the history this client saw, the document against its entries. */
export interface DocumentVerification extends DocumentArchiveVerification {
  /** How the checkpoint relates to the one kept before (null when the answer had none). */
  checkpointChange: CheckpointChange | null;
  /** The entries as the gateway answered them. */
  entries: DocumentArchive['entries'];
}

/** The bank's payment statuses that move no document status, so no feed event and no entry records them. */
const PAYMENT_PROGRESS_STATUSES = new Set(['PENDING', 'PROCESSING']);

/**
 * The gateway's verifiable archive, checked on this side (README, "Verifying the archive"): every entry's
 * inclusion proof against a checkpoint signed with the pinned key, every newer checkpoint's consistency
 * with the newest one kept, the document's entries as one history, and the document as the API shows it
 * against its latest entry. Findings are values: `ok: false` means the gateway showed something its
 * archive does not prove.
 */
export class Archive {
  private readonly store: CheckpointStore;

  constructor(
    private readonly transport: Transport,
    private readonly events: Events,
    private readonly options: ArchiveOptions,
  ) {
    this.store = options.store ?? new MemoryCheckpointStore();
  }

  async verifyDocument(documentId: string, options?: CallOptions): Promise<DocumentVerification> {
    let answer: DocumentArchive;
    let current: unknown;
    // A change between the two reads makes them disagree without anything being wrong: both are read again once.
    for (let attempt = 1; ; attempt++) {
      const { data } = await this.transport.send(
        { method: 'GET', path: '/api/v1/documents/{id}/archive' },
        (signal) => this.transport.api.GET('/api/v1/documents/{id}/archive', { params: { path: { id: documentId } }, signal }),
        options,
      );
      ({ data: current } = await this.transport.send(
        { method: 'GET', path: '/api/v1/documents/{id}' },
        (signal) => this.transport.api.GET('/api/v1/documents/{id}', { params: { path: { id: documentId } }, signal }),
        options,
      ));
      answer = data;
      if (attempt === 2 || !differsFromLatest(answer, current)) break;
    }
    const result: DocumentVerification = {
      ...verifyDocumentArchive(answer, { verifierKey: this.options.verifierKey, documentId }),
      checkpointChange: null,
      entries: answer.entries,
    };
    const findings = [...result.findings, ...historyFindings(answer, current)];
    if (result.checkpoint && answer.checkpoint) {
      result.checkpointChange = await this.follow(answer.checkpoint, result.checkpoint, options);
      if (!result.checkpointChange.ok)
        findings.push({ index: null, position: null, problem: `checkpoint ${result.checkpointChange.problem}: ${result.checkpointChange.reason}` });
    }
    return { ...result, findings, ok: findings.length === 0 };
  }

  /**
   * The source's whole feed against the archive: each document's sealed entries must still be in the feed
   * (those older than the feed's oldest event excepted: retention removed them), and each of its documents
   * verifies (`verifyDocument`). An audit, not a hot path: one request per document. An entry whose event
   * the listing did not have may have been written after the listing passed it: the feed is listed again,
   * only then, and what it has now is not a finding.
   */
  async verifyFeed(options?: CallOptions): Promise<{ ok: boolean; documents: number; findings: Array<{ documentId: string; problem: string }> }> {
    const inFeed = new Map<string, Set<string>>();
    let oldest: number | null = null;
    for await (const event of this.events.list({ ...options, limit: 100 })) {
      oldest ??= Date.parse(event.createdAt);
      const ids = inFeed.get(event.documentId) ?? new Set<string>();
      inFeed.set(event.documentId, ids.add(event.id));
    }
    const findings: Array<{ documentId: string; problem: string }> = [];
    const unlisted: Array<{ documentId: string; eventId: string }> = [];
    for (const [documentId, ids] of inFeed) {
      const verification = await this.verifyDocument(documentId, options);
      for (const finding of verification.findings) findings.push({ documentId, problem: finding.problem });
      for (const entry of verification.entries) {
        if (entry.index === null) continue;
        const { event } = JSON.parse(entry.entry) as { event: { id: string; createdAt: string } };
        if (!ids.has(event.id) && oldest !== null && Date.parse(event.createdAt) >= oldest) unlisted.push({ documentId, eventId: event.id });
      }
    }
    if (unlisted.length > 0) {
      const now = new Set<string>();
      for await (const event of this.events.list({ ...options, limit: 100 })) now.add(event.id);
      for (const { documentId, eventId } of unlisted) {
        if (!now.has(eventId)) findings.push({ documentId, problem: `event ${eventId} is sealed in the archive and gone from the feed` });
      }
    }
    return { ok: findings.length === 0, documents: inFeed.size, findings };
  }

  /** Checks `note` against the newest checkpoint kept, and keeps it when it extends that one. */
  private async follow(note: string, next: { size: number; rootHash: Uint8Array }, options?: CallOptions): Promise<CheckpointChange> {
    const kept = await this.store.load();
    const opened = kept === null ? null : openCheckpoint(kept, this.options.verifierKey);
    // A kept checkpoint that no longer verifies is evidence (a changed store, or another key): never replaced.
    if (opened && !opened.ok) return { ok: false, problem: 'inconsistent', reason: `the checkpoint kept before does not verify (${opened.reason})` };
    const previous = opened?.checkpoint ?? null;
    let proof = null;
    if (previous && next.size > previous.size) {
      const { data } = await this.transport.send(
        { method: 'GET', path: '/api/v1/archive/consistency' },
        (signal) => this.transport.api.GET('/api/v1/archive/consistency', { params: { query: { from: previous.size, to: next.size } }, signal }),
        options,
      );
      proof = decodeProof(data.proof);
    }
    const change = checkNewCheckpoint(previous, next, proof);
    if (change.ok && change.change !== 'same') await this.store.save(note);
    return change;
  }
}

/**
 * The entries as one history (created first, each change from the status before it, with every field but the
 * status, the payment and updatedAt as it was) and the document as the API answers it against the latest
 * entry's: only payment progress that moves no status may differ.
 */
function historyFindings(answer: DocumentArchive, current: unknown): DocumentArchiveVerification['findings'] {
  const findings: DocumentArchiveVerification['findings'] = [];
  let status: string | null = null;
  let unchanging: string | null = null;
  answer.entries.forEach((entry, position) => {
    let parsed: { event?: { type?: string; status?: string; previousStatus?: string | null }; document?: Record<string, unknown> };
    try {
      parsed = JSON.parse(entry.entry) as typeof parsed;
    } catch {
      return;
    }
    const event = parsed.event ?? {};
    // A history may begin with a change: the document's creation predates the archive, as the gateway's verifier allows.
    const follows = event.type === 'document.created' ? status === null : status === null || event.previousStatus === status;
    if (!follows) findings.push({ index: entry.index, position, problem: `a ${String(event.type)} event does not follow status ${String(status)}` });
    const next = unchangingJson(parsed.document ?? {});
    if (unchanging !== null && next !== unchanging) {
      findings.push({
        index: entry.index,
        position,
        problem: 'fields no event changes differ from the entry before: the document was changed between the two',
      });
    }
    status = event.status ?? null;
    unchanging = next;
  });
  if (differsFromLatest(answer, current)) {
    findings.push({ index: null, position: null, problem: 'the document the API shows differs from its latest archive entry' });
  }
  return findings;
}

/** Whether the document as the API answers it differs from its latest entry's by more than payment progress. */
function differsFromLatest(answer: DocumentArchive, current: unknown): boolean {
  const last = answer.entries.at(-1);
  if (!last) return false;
  let latest: Record<string, unknown> | undefined;
  try {
    latest = (JSON.parse(last.entry) as { document?: Record<string, unknown> }).document;
  } catch {
    return false;
  }
  return latest !== undefined && !sameDocument(current as Record<string, unknown>, latest);
}

/** A document's canonical JSON without what its events set (status, payment, updatedAt): the same in every entry of it. */
function unchangingJson(document: Record<string, unknown>): string {
  const { status: _status, payment: _payment, updatedAt: _updatedAt, ...unchanging } = document;
  return canonicalJson(unchanging);
}

function sameDocument(current: Record<string, unknown>, archived: Record<string, unknown>): boolean {
  if (canonicalJson(current) === canonicalJson(archived)) return true;
  const { payment, updatedAt } = current;
  const progress = payment as { status?: string; updatedAt?: string } | undefined;
  return (
    current.status === archived.status &&
    unchangingJson(current) === unchangingJson(archived) &&
    PAYMENT_PROGRESS_STATUSES.has(String(progress?.status)) &&
    progress?.updatedAt === updatedAt &&
    Date.parse(String(updatedAt)) >= Date.parse(String(archived.updatedAt))
  );
}

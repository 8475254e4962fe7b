import { Injectable } from '@nestjs/common';
import { AppError } from '../common/app-error.js';
import type { AuthenticatedKey } from '../auth/authenticated-key.js';
import { DocumentHistoryService } from '../documents/document-history.service.js';
import { DocumentsService } from '../documents/documents.service.js';
import type { ArchiveCheckpointEntity } from './archive-checkpoint.entity.js';
import { entryText } from './archive-entry.js';
import { ArchiveRepository, positionAfter } from './archive.repository.js';
import { ArchiveSigner } from './archive-signer.js';
import type { ArchivedEntryDto, DocumentArchiveDto } from './dto/archive-queries.dto.js';
import { consistencyProofRanges, inclusionProofRanges, NodeRef, nodesForRanges, rangeHash } from './merkle.js';

export interface ArchiveStatus {
  treeSize: number;
  sealLagSeconds: number;
  checkpoint: { treeSize: number; rootHash: string; signedAt: string; note: string } | null;
  lastVerification: { startedAt: string; finishedAt: string; treeSize: number; findingCount: number; findings: unknown[] } | null;
}

/** What the archive answers clients and administrators: checkpoints, a document's entries with their proofs, consistency proofs. */
@Injectable()
export class ArchiveService {
  constructor(
    private readonly archive: ArchiveRepository,
    private readonly history: DocumentHistoryService,
    private readonly documents: DocumentsService,
    private readonly signer: ArchiveSigner,
  ) {}

  /** This gateway's key under the log's origin. */
  async verifierKey(): Promise<string> {
    return this.signer.verifierKey(this.signer.originAfter(await this.archive.latestCheckpoint()));
  }

  async latestCheckpoint(): Promise<string> {
    const checkpoint = await this.archive.latestCheckpoint();
    if (!checkpoint) throw new AppError('NOT_FOUND', 'No checkpoint has been signed yet: the archive has no entries');
    return checkpoint.note;
  }

  /**
   * Every entry of one of the key's documents, oldest first: sealed ones with their inclusion proofs against
   * the checkpoint of `treeSize` (the latest by default), then the events not sealed yet, without index or proof.
   */
  async ofDocument(key: AuthenticatedKey, documentId: string, treeSize?: number): Promise<DocumentArchiveDto> {
    // A document the key may not read is a 404, as for GET /api/v1/documents/{id}.
    await this.documents.get(key, documentId);
    const checkpoint = treeSize === undefined ? await this.archive.latestCheckpoint() : await this.checkpointOf(treeSize);
    const size = checkpoint ? Number(checkpoint.treeSize) : 0;
    const sealed = await this.archive.ofDocument(key.source, documentId);
    const proofs = await this.hashesOf(sealed.filter((row) => Number(row.index) < size).map((row) => inclusionProofRanges(Number(row.index), size)));
    const entries: ArchivedEntryDto[] = sealed.map((row) => {
      const index = Number(row.index);
      return index < size ? { index, entry: row.entry, inclusionProof: proofs.shift()! } : { index, entry: row.entry };
    });
    const sealedEvents = new Set(sealed.map((row) => row.eventId));
    for (const record of await this.history.ofDocument(key.source, documentId)) {
      if (sealedEvents.has(record.eventId)) continue;
      entries.push({ index: null, entry: entryText({ index: null, event: record.event, document: record.document, bankEventId: record.bankEventId }) });
    }
    return { checkpoint: checkpoint?.note ?? null, entries };
  }

  /** The RFC 9162 consistency proof between two tree sizes, the newer at most the latest checkpoint's. */
  async consistency(from: number, to: number): Promise<string[]> {
    const latest = await this.archive.latestCheckpoint();
    const size = latest ? Number(latest.treeSize) : 0;
    if (from > to || to > size) {
      throw AppError.validation([
        { field: from > to ? 'from' : 'to', message: from > to ? 'must not exceed to' : `must not exceed the latest checkpoint's tree size (${size})` },
      ]);
    }
    const [proof] = await this.hashesOf([consistencyProofRanges(from, to)]);
    return proof;
  }

  /** When the oldest feed event not sealed yet was written, or null: what retention must not purge past. */
  async oldestUnsealed(): Promise<Date | null> {
    const head = await this.archive.latestEntry();
    return this.history.oldestAfter(positionAfter(head));
  }

  async status(): Promise<ArchiveStatus> {
    const [head, checkpoint, verification] = await Promise.all([
      this.archive.latestEntry(),
      this.archive.latestCheckpoint(),
      this.archive.latestVerification(),
    ]);
    const oldest = await this.history.oldestAfter(positionAfter(head));
    return {
      treeSize: head ? Number(head.index) + 1 : 0,
      sealLagSeconds: oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0,
      checkpoint: checkpoint
        ? {
            treeSize: Number(checkpoint.treeSize),
            rootHash: checkpoint.rootHash.toString('base64'),
            signedAt: checkpoint.signedAt.toISOString(),
            note: checkpoint.note,
          }
        : null,
      lastVerification: verification
        ? {
            startedAt: verification.startedAt.toISOString(),
            finishedAt: verification.finishedAt.toISOString(),
            treeSize: Number(verification.treeSize),
            findingCount: verification.findingCount,
            findings: verification.findings,
          }
        : null,
    };
  }

  private async checkpointOf(treeSize: number): Promise<ArchiveCheckpointEntity> {
    const checkpoint = await this.archive.checkpointOf(treeSize);
    if (!checkpoint) throw new AppError('NOT_FOUND', 'No checkpoint of that tree size was signed');
    return checkpoint;
  }

  /** Each proof's hashes, base64, from the stored nodes of all of them, read in one query. */
  private async hashesOf(proofs: ReadonlyArray<Array<[number, number]>>): Promise<string[][]> {
    const nodes = await this.archive.nodeHashes(nodesForRanges(proofs.flat()));
    const lookup = (node: NodeRef) => nodes.get(`${node.level}:${node.index}`);
    return proofs.map((ranges) => ranges.map(([start, end]) => rangeHash(start, end, lookup).toString('base64')));
  }
}

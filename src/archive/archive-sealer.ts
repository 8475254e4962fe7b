import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { describeFailure } from '../common/database-failure.js';
import { AppConfig } from '../config/app-config.js';
import { parseIsoDuration, shortestSeconds } from '../config/iso-duration.js';
import { Transactions } from '../database/transaction.js';
import { DocumentHistoryService, FeedPosition } from '../documents/document-history.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { ArchiveCheckpointEntity } from './archive-checkpoint.entity.js';
import type { ArchiveEntryEntity } from './archive-entry.entity.js';
import { entryText } from './archive-entry.js';
import type { ArchiveNodeEntity } from './archive-node.entity.js';
import { ArchiveRepository, positionAfter } from './archive.repository.js';
import { ArchiveSigner } from './archive-signer.js';
import { leafHash, nodeHash, NodeRef, nodesCompletedBy, rangeHash, rangeNodes } from './merkle.js';

/** Entries per seal: one transaction each, so a seal is short however far behind sealing is. */
export const SEAL_BATCH = 1000;
/** Entries made between two turns of the event loop. */
const YIELD_EVERY = 100;

const nodeKey = (node: NodeRef) => `${node.level}:${node.index}`;
const millisecondsOf = (duration: string) => shortestSeconds(parseIsoDuration(duration)!) * 1000;

export interface SealOutcome {
  /** False when another instance was sealing. */
  sealing: boolean;
  sealed: number;
  treeSize: number;
  checkpointSigned: boolean;
}

/**
 * Seals feed events into the archive (docs/archive.md), off the request path: every ARCHIVE_SEAL_INTERVAL
 * each instance tries the sealer's lock, and the one that gets it appends the events committed since the
 * last seal, in the feed's order, with their tree nodes and, when due, a checkpoint, in one transaction.
 * Nothing a request writes waits for it; a crash mid-seal rolls the seal back, and the next one, by any
 * instance, starts where the last committed one ended, so no event is lost or sealed twice.
 */
@Injectable()
export class ArchiveSealer implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Archive');
  private readonly sealIntervalMs: number;
  private readonly checkpointIntervalMs: number;
  private readonly entriesSealed: Counter;
  private readonly treeSize: Gauge;
  private readonly sealLag: Gauge;
  private readonly verificationFailures: Counter;
  /** The newest failed verification run counted so far; null until the first look, which counts none: a restart recounts nothing. */
  private failedRunsSeen: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private keyMismatchLogged = false;
  /** The last seal failed: its failure was logged, and the next ones are not until one succeeds. */
  private failing = false;

  constructor(
    private readonly transactions: Transactions,
    private readonly archive: ArchiveRepository,
    private readonly history: DocumentHistoryService,
    private readonly signer: ArchiveSigner,
    config: AppConfig,
    metrics: MetricsService,
  ) {
    this.sealIntervalMs = millisecondsOf(config.ARCHIVE_SEAL_INTERVAL);
    this.checkpointIntervalMs = millisecondsOf(config.ARCHIVE_CHECKPOINT_INTERVAL);
    this.entriesSealed = new Counter({ name: 'archive_entries_total', help: 'Archive entries sealed by this instance', registers: [metrics.registry] });
    this.treeSize = new Gauge({
      name: 'archive_tree_size',
      help: 'Entries in the archive, as of the last seal this instance tried',
      registers: [metrics.registry],
    });
    this.sealLag = new Gauge({
      name: 'archive_seal_lag_seconds',
      help: 'Age of the oldest feed event not yet sealed into the archive (0 when every one is)',
      registers: [metrics.registry],
    });
    this.verificationFailures = new Counter({
      name: 'archive_verification_failures_total',
      help: 'Runs of tdg archive verify on the database that found an alteration (counted from the runs recorded)',
      registers: [metrics.registry],
    });
  }

  onApplicationBootstrap(): void {
    this.schedule();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.catchUp()
        .then(() => {
          if (this.failing) this.logger.log('Sealing the archive works again');
          this.failing = false;
        })
        .catch((error: unknown) => {
          // Once per outage, not once a second: the seal lag (archive_seal_lag_seconds) tells how long it lasts.
          if (!this.failing) this.logger.warn(describeFailure(error), 'Sealing the archive failed; the next seal tries again');
          this.failing = true;
        })
        .finally(() => {
          this.running = null;
          this.schedule();
        });
    }, this.sealIntervalMs);
    this.timer.unref();
  }

  /** Seals until nothing committed is left unsealed, then measures the lag. */
  async catchUp(): Promise<void> {
    let outcome: SealOutcome;
    do outcome = await this.sealOnce();
    while (outcome.sealing && outcome.sealed === SEAL_BATCH && !this.stopped);
    this.treeSize.set(outcome.treeSize);
    const position = await this.position();
    const oldest = await this.history.oldestAfter(position);
    this.sealLag.set(oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0);
    const failed = await this.archive.failedVerificationsAfter(this.failedRunsSeen ?? '0');
    if (this.failedRunsSeen !== null && failed.length > 0) this.verificationFailures.inc(failed.length);
    this.failedRunsSeen = failed.at(-1)?.id ?? this.failedRunsSeen ?? '0';
  }

  /** One seal: up to SEAL_BATCH events, their nodes and a checkpoint when one is due, committed together. */
  async sealOnce(): Promise<SealOutcome> {
    const outcome = await this.transactions.run(async (tx) => {
      const begun = await this.archive.beginSeal(tx);
      const size = begun.head ? Number(begun.head.index) + 1 : 0;
      if (!begun.sealing) return { sealing: false, sealed: 0, treeSize: size, checkpointSigned: false };
      const records = await this.history.after(positionAfter(begun.head), SEAL_BATCH, tx);
      const sealedAt = new Date();
      const treeSize = size + records.length;
      const due = this.checkpointDue(begun.checkpoint, treeSize, sealedAt);
      if (records.length === 0 && !due) return { sealing: true, sealed: 0, treeSize, checkpointSigned: false };
      // The right edge of the tree so far: every node a new one is made of that is not new itself.
      const known = await this.archive.nodeHashes(size > 0 ? rangeNodes(0, size) : [], tx);
      const entries: ArchiveEntryEntity[] = [];
      const nodes: ArchiveNodeEntity[] = [];
      const add = (node: NodeRef, hash: Buffer) => {
        known.set(nodeKey(node), hash);
        nodes.push({ level: node.level, index: String(node.index), hash });
      };
      for (const [offset, record] of records.entries()) {
        // Requests go first: a batch's JSON and hashing would otherwise hold the event loop for its whole length.
        if (offset > 0 && offset % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
        const index = size + offset;
        const entry = entryText({ index, event: record.event, document: record.document, bankEventId: record.bankEventId });
        add({ level: 0, index }, leafHash(entry));
        for (const node of nodesCompletedBy(index)) add(node, nodeHash(known.get(nodeKey(node.left))!, known.get(nodeKey(node.right))!));
        const { xid, id } = record.position;
        entries.push({ index: String(index), eventId: id, source: record.source, documentId: record.event.documentId, feedXid: xid, entry, sealedAt });
      }
      const checkpoint = due
        ? this.checkpoint(
            begun.checkpoint,
            treeSize,
            rangeHash(0, treeSize, (node) => known.get(nodeKey(node))),
            sealedAt,
          )
        : null;
      this.archive.append(tx, entries, nodes, checkpoint);
      return { sealing: true, sealed: records.length, treeSize, checkpointSigned: checkpoint !== null };
    });
    if (outcome.sealed > 0) this.entriesSealed.inc(outcome.sealed);
    return outcome;
  }

  private async position(): Promise<FeedPosition> {
    return positionAfter(await this.archive.latestEntry());
  }

  /**
   * A checkpoint is due when the tree has grown since the last one and that one is ARCHIVE_CHECKPOINT_INTERVAL
   * old; the first as soon as there is an entry. One signed by another key is not followed by one of this
   * key: instances that do not share ARCHIVE_SIGNING_KEY would otherwise serve a log whose signer changes.
   */
  private checkpointDue(last: ArchiveCheckpointEntity | null, treeSize: number, at: Date): boolean {
    if (treeSize === 0 || (last && Number(last.treeSize) >= treeSize)) return false;
    if (last && at.getTime() - last.signedAt.getTime() < this.checkpointIntervalMs) return false;
    if (last && last.verifierKey !== this.signer.verifierKey(this.signer.originAfter(last))) {
      if (!this.keyMismatchLogged) {
        this.logger.error(
          'The last checkpoint was signed by another key or under another ARCHIVE_ORIGIN: this instance signs none; set the same ARCHIVE_SIGNING_KEY and ARCHIVE_ORIGIN on every instance',
        );
      }
      this.keyMismatchLogged = true;
      return false;
    }
    return true;
  }

  private checkpoint(last: ArchiveCheckpointEntity | null, treeSize: number, rootHash: Buffer, signedAt: Date): ArchiveCheckpointEntity {
    const origin = this.signer.originAfter(last);
    return {
      treeSize: String(treeSize),
      rootHash,
      note: this.signer.checkpoint(origin, treeSize, rootHash),
      verifierKey: this.signer.verifierKey(origin),
      signedAt,
    };
  }
}

import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { MoreThan, Repository } from 'typeorm';
import { arraysOf, selectColumns, unnestColumnsOf } from '../database/entity-sql.js';
import { PreparedStatement } from '../database/prepared-statement.js';
import { rowsOf, Transaction } from '../database/transaction.js';
import { ArchiveCheckpointEntity } from './archive-checkpoint.entity.js';
import { ArchiveEntryEntity } from './archive-entry.entity.js';
import { ArchiveNodeEntity } from './archive-node.entity.js';
import { ArchiveVerificationEntity } from './archive-verification.entity.js';
import { FEED_START, FeedPosition } from '../documents/document-history.service.js';
import type { NodeRef } from './merkle.js';

/** The sealer's advisory lock: its own namespace (7_340_216 to 7_340_220 are the others'), one key. */
export const ARCHIVE_LOCK_NAMESPACE = 7_340_221;

const ENTRY_COLUMNS = ['index', 'eventId', 'source', 'documentId', 'feedXid', 'entry', 'sealedAt'] as const satisfies readonly (keyof ArchiveEntryEntity)[];
const NODE_COLUMNS = ['level', 'index', 'hash'] as const satisfies readonly (keyof ArchiveNodeEntity)[];

/** The newest entry: how far the tree and sealing have come. */
export type ArchiveHead = Pick<ArchiveEntryEntity, 'index' | 'eventId' | 'feedXid'>;

/** Where in the feed's order sealing goes on after `head`. */
export function positionAfter(head: ArchiveHead | null): FeedPosition {
  return head ? { xid: head.feedXid, id: head.eventId } : FEED_START;
}

/** The archive's tables: written by the sealer only, in its transaction; never updated or deleted (the tables refuse it). */
@Injectable()
export class ArchiveRepository {
  /** Whether this transaction is the one sealing now: a try-lock, so another instance's seal is never waited for. */
  private readonly sealLock = new PreparedStatement<{ sealing: boolean }>(
    'archive-seal-lock',
    `SELECT pg_try_advisory_xact_lock(${ARCHIVE_LOCK_NAMESPACE}, 1) AS sealing`,
  );
  private readonly head: PreparedStatement<ArchiveHead>;
  private readonly latestCheckpointStatement: PreparedStatement<ArchiveCheckpointEntity>;
  private readonly nodesStatement: PreparedStatement<ArchiveNodeEntity>;
  private readonly insertEntries: PreparedStatement;
  private readonly insertNodes: PreparedStatement;
  private readonly insertCheckpoint: PreparedStatement;

  constructor(
    @InjectRepository(ArchiveEntryEntity) private readonly entries: Repository<ArchiveEntryEntity>,
    @InjectRepository(ArchiveNodeEntity) private readonly nodes: Repository<ArchiveNodeEntity>,
    @InjectRepository(ArchiveCheckpointEntity) private readonly checkpoints: Repository<ArchiveCheckpointEntity>,
    @InjectRepository(ArchiveVerificationEntity) private readonly verifications: Repository<ArchiveVerificationEntity>,
  ) {
    this.head = new PreparedStatement(
      'archive-head',
      `SELECT ${selectColumns(entries.metadata, { only: ['index', 'eventId', 'feedXid'] })} FROM archive_entries ORDER BY index DESC LIMIT 1`,
    );
    this.latestCheckpointStatement = new PreparedStatement(
      'archive-latest-checkpoint',
      `SELECT ${selectColumns(checkpoints.metadata)} FROM archive_checkpoints ORDER BY tree_size DESC LIMIT 1`,
    );
    this.nodesStatement = new PreparedStatement(
      'archive-nodes',
      `SELECT ${selectColumns(nodes.metadata, { alias: 'n' })} FROM archive_nodes n JOIN unnest($1::smallint[], $2::bigint[]) AS wanted(level, index)
          ON n.level = wanted.level AND n.index = wanted.index`,
    );
    this.insertEntries = new PreparedStatement('archive-entries-insert', `INSERT INTO archive_entries ${unnestColumnsOf(entries.metadata, ENTRY_COLUMNS)}`);
    this.insertNodes = new PreparedStatement('archive-nodes-insert', `INSERT INTO archive_nodes ${unnestColumnsOf(nodes.metadata, NODE_COLUMNS)}`);
    this.insertCheckpoint = new PreparedStatement(
      'archive-checkpoint-insert',
      `INSERT INTO archive_checkpoints ${unnestColumnsOf(checkpoints.metadata, ['treeSize', 'rootHash', 'note', 'verifierKey', 'signedAt'])}`,
    );
  }

  /**
   * Takes the sealer's lock in `tx` when free and reads, in the same round trip, the newest entry and
   * checkpoint. Each statement reads what committed before it began (READ COMMITTED), so behind the lock they
   * see what the previous seal, by any instance, committed. Nothing else is read while `tx` holds its
   * connection: a second one taken from the pool then could wait on requests that wait on this one.
   */
  async beginSeal(tx: Transaction): Promise<{ sealing: boolean; head: ArchiveHead | null; checkpoint: ArchiveCheckpointEntity | null }> {
    const [[lock], [head], [checkpoint]] = await tx.read({ reads: [this.sealLock.with(), this.head.with(), this.latestCheckpointStatement.with()] });
    return { sealing: lock.sealing, head: head ?? null, checkpoint: checkpoint ?? null };
  }

  /** The stored hashes of `wanted`, by "level:index"; in `tx` when given. */
  async nodeHashes(wanted: readonly NodeRef[], tx?: Transaction): Promise<Map<string, Buffer>> {
    if (wanted.length === 0) return new Map();
    const bound = this.nodesStatement.with(
      wanted.map((node) => node.level),
      wanted.map((node) => String(node.index)),
    );
    const rows = await rowsOf(bound, this.nodes.manager, tx);
    return new Map(rows.map((row) => [`${row.level}:${row.index}`, row.hash]));
  }

  /** Entries, their tree's new nodes and a checkpoint, written at `tx`'s commit. */
  append(tx: Transaction, entries: readonly ArchiveEntryEntity[], nodes: readonly ArchiveNodeEntity[], checkpoint: ArchiveCheckpointEntity | null): void {
    if (entries.length > 0) tx.write(this.insertEntries.with(...arraysOf(entries, ENTRY_COLUMNS)));
    if (nodes.length > 0) tx.write(this.insertNodes.with(...arraysOf(nodes, NODE_COLUMNS)));
    if (checkpoint) tx.write(this.insertCheckpoint.with(...arraysOf([checkpoint], ['treeSize', 'rootHash', 'note', 'verifierKey', 'signedAt'])));
  }

  /** The newest entry, read alone. */
  async latestEntry(): Promise<ArchiveHead | null> {
    const [head] = await this.head.run(this.entries.manager);
    return head ?? null;
  }

  async size(): Promise<number> {
    const head = await this.latestEntry();
    return head ? Number(head.index) + 1 : 0;
  }

  async latestCheckpoint(): Promise<ArchiveCheckpointEntity | null> {
    const [checkpoint] = await this.latestCheckpointStatement.run(this.checkpoints.manager);
    return checkpoint ?? null;
  }

  checkpointOf(treeSize: number): Promise<ArchiveCheckpointEntity | null> {
    return this.checkpoints.findOneBy({ treeSize: String(treeSize) });
  }

  /** Checkpoints in order of size, `limit` after `afterSize`. */
  checkpointsAfter(afterSize: number, limit: number): Promise<ArchiveCheckpointEntity[]> {
    return this.checkpoints.find({ where: { treeSize: MoreThan(String(afterSize)) }, order: { treeSize: 'ASC' }, take: limit });
  }

  /** A document's entries of `source`, in order (idx_archive_entries_document). */
  ofDocument(source: string, documentId: string): Promise<ArchiveEntryEntity[]> {
    return this.entries.find({ where: { documentId, source }, order: { index: 'ASC' } });
  }

  /** Each of these documents' newest entry. */
  latestOfDocuments(documentIds: readonly string[]): Promise<ArchiveEntryEntity[]> {
    if (documentIds.length === 0) return Promise.resolve([]);
    return this.entries.query(
      `SELECT DISTINCT ON (document_id) ${selectColumns(this.entries.metadata)} FROM archive_entries WHERE document_id = ANY($1::uuid[]) ORDER BY document_id, index DESC`,
      [documentIds],
    );
  }

  /** Entries in order of index, `limit` from `fromIndex`. */
  entriesFrom(fromIndex: number, limit: number): Promise<ArchiveEntryEntity[]> {
    return this.entries.find({ where: { index: MoreThan(String(fromIndex - 1)) }, order: { index: 'ASC' }, take: limit });
  }

  /** The level-0 nodes (leaf hashes) of `limit` leaves from `fromIndex`. */
  leavesFrom(fromIndex: number, limit: number): Promise<ArchiveNodeEntity[]> {
    return this.nodes.find({ where: { level: 0, index: MoreThan(String(fromIndex - 1)) }, order: { index: 'ASC' }, take: limit });
  }

  recordVerification(run: Omit<ArchiveVerificationEntity, 'id'>): Promise<ArchiveVerificationEntity> {
    return this.verifications.save(this.verifications.create(run));
  }

  latestVerification(): Promise<ArchiveVerificationEntity | null> {
    return this.verifications.findOne({ where: {}, order: { id: 'DESC' } });
  }

  /** Runs recorded after `afterId` that found something: what archive_verification_failures_total counts. */
  failedVerificationsAfter(afterId: string): Promise<Array<Pick<ArchiveVerificationEntity, 'id'>>> {
    return this.verifications.find({ select: { id: true }, where: { id: MoreThan(afterId), findingCount: MoreThan(0) }, order: { id: 'ASC' } });
  }
}

import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One run of `tdg archive verify` against the database: what GET /admin/archive and the metrics report. Append-only. */
@Entity('archive_verifications')
export class ArchiveVerificationEntity {
  @PrimaryGeneratedColumn('identity', { type: 'bigint' })
  id: string;

  @Column({ name: 'started_at', type: 'timestamptz' })
  startedAt: Date;

  @Column({ name: 'finished_at', type: 'timestamptz' })
  finishedAt: Date;

  /** The number of entries verified. */
  @Column({ name: 'tree_size', type: 'bigint' })
  treeSize: string;

  @Column({ name: 'finding_count', type: 'integer' })
  findingCount: number;

  /** The first findings, each `{ kind, documentId, index, detail }`. */
  @Column({ type: 'jsonb' })
  findings: unknown[];
}

import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { DocumentEntity } from './document.entity.js';
import type { DocumentStatus } from './lifecycle.js';

export type DocumentEventType = 'document.created' | 'document.status_changed';

/**
 * The client event feed: one row per creation and status change, written with the change itself, and
 * idx_document_events_source_xid_id over (source, xid, id) for the feed's order (see `xid`).
 */
@Entity('document_events')
@Index('idx_document_events_source_xid_id', { synchronize: false })
@Index('idx_document_events_document', ['documentId'])
export class DocumentEventEntity {
  @PrimaryGeneratedColumn('identity', { type: 'bigint' })
  id: string;

  @Column({ type: 'varchar', length: 63 })
  source: string;

  @Column({ name: 'document_id', type: 'uuid' })
  documentId: string;

  @ManyToOne(() => DocumentEntity, { onDelete: 'CASCADE', createForeignKeyConstraints: true })
  @JoinColumn({ name: 'document_id', foreignKeyConstraintName: 'fk_document_events_document' })
  document?: DocumentEntity;

  @Column({ type: 'varchar', length: 32 })
  type: DocumentEventType;

  @Column({ type: 'varchar', length: 20 })
  status: DocumentStatus;

  @Column({ name: 'previous_status', type: 'varchar', length: 20, nullable: true })
  previousStatus: DocumentStatus | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /**
   * The bank's eventId when a bank event made this change, else null: with it, the archive tells the
   * document as this event left it (document-history.ts) without the bank's records. Never shown in the feed.
   */
  @Column({ name: 'bank_event_id', type: 'varchar', length: 255, nullable: true })
  bankEventId: string | null;

  /** The W3C traceparent of the request that produced it, when traced: its push deliveries' spans link to it. */
  @Column({ name: 'trace_parent', type: 'varchar', length: 55, nullable: true })
  traceParent: string | null;

  /**
   * The writing transaction's id (column `xid`, xid8, default pg_current_xact_id(), as text), which only
   * the feed's statement reads. TypeORM has no xid8 type, so the column is not declared (nor its index):
   * a migration made with migration:generate proposes dropping it, and that line must be removed from it.
   */
  xid?: string;
}

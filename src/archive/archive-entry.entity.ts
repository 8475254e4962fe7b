import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * One sealed feed event (docs/archive.md): the RFC 8785 canonical JSON text hashed into the archive's
 * tree, kept verbatim. The table refuses UPDATE, DELETE and TRUNCATE (migration Archive), and nothing
 * references the feed or the documents, so the archive outlives both.
 */
@Entity('archive_entries')
@Index('uq_archive_entries_event', ['eventId'], { unique: true })
@Index('idx_archive_entries_document', ['documentId', 'index'])
export class ArchiveEntryEntity {
  /** The leaf's 0-based position in the tree. */
  @PrimaryColumn({ type: 'bigint' })
  index: string;

  @Column({ name: 'event_id', type: 'bigint' })
  eventId: string;

  @Column({ type: 'varchar', length: 63 })
  source: string;

  @Column({ name: 'document_id', type: 'uuid' })
  documentId: string;

  /** The event's transaction id (xid8, as a number): with eventId, where in the feed's order sealing goes on. */
  @Column({ name: 'feed_xid', type: 'numeric' })
  feedXid: string;

  @Column({ type: 'text' })
  entry: string;

  @Column({ name: 'sealed_at', type: 'timestamptz' })
  sealedAt: Date;
}

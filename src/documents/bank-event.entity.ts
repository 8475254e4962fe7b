import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** The one kind of bank event that is applied to documents; others are recorded and acknowledged. */
export const PAYMENT_STATUS_EVENT = 'PAYMENT_STATUS';

/**
 * applied; ignored (another event type, an unknown status or a transition the lifecycle refuses);
 * duplicate (an eventId seen before); unmatched (no document has the reference yet); ambiguous (documents
 * of several sources have it and none has had an event applied, reference-claims.ts: applied to none until
 * an administrator says which).
 */
export const BANK_EVENT_OUTCOMES = ['applied', 'ignored', 'duplicate', 'unmatched', 'ambiguous'] as const;
export type BankEventOutcome = (typeof BANK_EVENT_OUTCOMES)[number];

/**
 * The bank's payment status events, every delivery its webhook made that was accepted. One row per
 * eventId is the event itself, kept with its raw bytes; later deliveries of the same eventId are
 * 'duplicate' rows (the partial unique index says so) that keep only the eventId, the SHA-256 of their
 * body and their times (ck_webhook_events_duplicate_hash_only).
 */
@Entity('webhook_events')
@Index('uq_webhook_events_event_id', ['eventId'], { unique: true, where: `outcome <> 'duplicate'` })
@Index('idx_webhook_events_unmatched', ['providerReference', 'id'], { where: `outcome = 'unmatched'` })
@Index('idx_webhook_events_outcome', ['outcome', 'id'])
@Index('idx_webhook_events_duplicates', ['eventId'], { where: `outcome = 'duplicate'` })
// A BRIN index, which TypeORM cannot declare: left alone by migration:generate.
@Index('idx_webhook_events_received_at', { synchronize: false })
@Check(
  'ck_webhook_events_duplicate_hash_only',
  `CASE WHEN "outcome" = 'duplicate'
        THEN "raw_body" IS NULL AND "event_type" IS NULL AND "status" IS NULL AND "provider_reference" IS NULL
        ELSE "raw_body" IS NOT NULL AND "event_type" IS NOT NULL AND "status" IS NOT NULL AND "provider_reference" IS NOT NULL END`,
)
export class BankEventEntity {
  @PrimaryGeneratedColumn('identity', { type: 'bigint' })
  id: string;

  @Column({ name: 'event_id', type: 'varchar', length: 255 })
  eventId: string;

  @Column({ name: 'event_type', type: 'varchar', length: 255, nullable: true })
  eventType: string | null;

  @Column({ type: 'varchar', length: 255, nullable: true })
  status: string | null;

  @Column({ name: 'provider_reference', type: 'varchar', length: 255, nullable: true })
  providerReference: string | null;

  @Column({ type: 'varchar', length: 16 })
  outcome: BankEventOutcome;

  @Column({ name: 'document_id', type: 'uuid', nullable: true })
  documentId: string | null;

  /** The body exactly as signed and received; null for a duplicate. */
  @Column({ name: 'raw_body', type: 'bytea', nullable: true })
  rawBody: Buffer | null;

  @Column({ name: 'body_sha256', type: 'bytea' })
  bodySha256: Buffer;

  /** X-Provider-Timestamp of the delivery. */
  @Column({ name: 'signed_at', type: 'timestamptz' })
  signedAt: Date;

  @CreateDateColumn({ name: 'received_at', type: 'timestamptz' })
  receivedAt: Date;

  /** When an unmatched event was applied to a document created later. */
  @Column({ name: 'processed_at', type: 'timestamptz', nullable: true })
  processedAt: Date | null;
}

/**
 * An event's own row, as first received (not a duplicate's): its type, status and reference are always
 * there (ck_webhook_events_duplicate_hash_only).
 */
export type ReceivedBankEvent = BankEventEntity & { eventType: string; status: string; providerReference: string };

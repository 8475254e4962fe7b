import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export const WEBHOOK_OUTCOMES = ['applied', 'ignored', 'duplicate', 'unmatched'] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

/**
 * Every accepted delivery, kept with its raw bytes. One row per eventId is the event itself; later
 * deliveries of the same eventId are kept as 'duplicate' rows (the partial unique index says so).
 */
@Entity('webhook_events')
@Index('uq_webhook_events_event_id', ['eventId'], { unique: true, where: `outcome <> 'duplicate'` })
@Index('idx_webhook_events_provider_reference', ['providerReference'])
@Index('idx_webhook_events_outcome', ['outcome', 'id'])
export class WebhookEventEntity {
  @PrimaryGeneratedColumn('identity', { type: 'bigint' })
  id: string;

  @Column({ name: 'event_id', type: 'varchar', length: 255 })
  eventId: string;

  @Column({ name: 'event_type', type: 'varchar', length: 255 })
  eventType: string;

  @Column({ type: 'varchar', length: 255 })
  status: string;

  @Column({ name: 'provider_reference', type: 'varchar', length: 255 })
  providerReference: string;

  @Column({ type: 'varchar', length: 16 })
  outcome: WebhookOutcome;

  @Column({ name: 'document_id', type: 'uuid', nullable: true })
  documentId: string | null;

  /** The body exactly as signed and received. */
  @Column({ name: 'raw_body', type: 'bytea' })
  rawBody: Buffer;

  /** X-Provider-Timestamp of the delivery. */
  @Column({ name: 'signed_at', type: 'timestamptz' })
  signedAt: Date;

  @CreateDateColumn({ name: 'received_at', type: 'timestamptz' })
  receivedAt: Date;

  /** When an unmatched event was applied to a document created later. */
  @Column({ name: 'processed_at', type: 'timestamptz', nullable: true })
  processedAt: Date | null;
}

import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn, Unique } from 'typeorm';
import { DocumentEventEntity } from '../documents/document-event.entity.js';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * One (event, endpoint) pair to deliver, written by the feed's trigger in the event's transaction.
 * `leaseExpiresAt` is the claim of the instance attempting it; after it passes, any instance may.
 */
@Entity('outbound_deliveries')
@Unique('uq_outbound_deliveries_endpoint_event', ['endpointId', 'eventId'])
@Index('idx_outbound_deliveries_event', ['eventId'])
@Index('idx_outbound_deliveries_endpoint_due', ['endpointId', 'nextAttemptAt'], { where: `status = 'pending'` })
@Check('ck_outbound_deliveries_status', `status IN ('pending', 'succeeded', 'failed')`)
export class OutboundDeliveryEntity {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', primaryKeyConstraintName: 'pk_outbound_deliveries' })
  id: string;

  /**
   * Not a foreign key: its check would lock the endpoint's row in every create of the source (see the
   * migration OutboundEndpointLockNotForeignKey); deleting an endpoint deletes its deliveries.
   */
  @Column({ name: 'endpoint_id', type: 'uuid' })
  endpointId: string;

  @Column({ name: 'event_id', type: 'bigint' })
  eventId: string;

  @ManyToOne(() => DocumentEventEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'event_id', foreignKeyConstraintName: 'fk_outbound_deliveries_event' })
  event?: DocumentEventEntity;

  @Column({ type: 'varchar', length: 63 })
  source: string;

  @Column({ name: 'event_type', type: 'varchar', length: 32 })
  eventType: string;

  @Column({ type: 'varchar', length: 16, default: 'pending' })
  status: DeliveryStatus;

  @Column({ type: 'integer', default: 0 })
  attempts: number;

  /** Position in the retry schedule; a manual retry starts it again. */
  @Column({ name: 'retry_step', type: 'integer', default: 0 })
  retryStep: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', nullable: true, default: () => 'now()' })
  nextAttemptAt: Date | null;

  @Column({ name: 'lease_expires_at', type: 'timestamptz', nullable: true })
  leaseExpiresAt: Date | null;

  @Column({ name: 'leased_by', type: 'varchar', length: 64, nullable: true })
  leasedBy: string | null;

  @Column({ name: 'last_attempt_at', type: 'timestamptz', nullable: true })
  lastAttemptAt: Date | null;

  @Column({ name: 'last_response_status', type: 'smallint', nullable: true })
  lastResponseStatus: number | null;

  @Column({ name: 'last_error', type: 'varchar', length: 32, nullable: true })
  lastError: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

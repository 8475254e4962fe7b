import { Check, Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, UpdateDateColumn, VirtualColumn } from 'typeorm';
import { MICROSECONDS_OF_CREATED_AT } from '../database/entity-sql.js';

export const OUTBOUND_EVENT_TYPES = ['document.created', 'document.status_changed'] as const;
export type OutboundEventType = (typeof OUTBOUND_EVENT_TYPES)[number];
export type DisabledReason = 'gone' | 'failing' | 'client' | 'admin';

/** A client's HTTPS receiver for its source's feed events. The secrets sign; they never leave in a GET. */
@Entity('webhook_endpoints')
@Index('idx_webhook_endpoints_source', ['source', 'createdAt'])
@Check('ck_webhook_endpoints_disabled_reason', `disabled_reason IN ('gone', 'failing', 'client', 'admin')`)
export class WebhookEndpointEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'pk_webhook_endpoints' })
  id: string;

  @Column({ type: 'varchar', length: 63 })
  source: string;

  @Column({ type: 'varchar', length: 2048 })
  url: string;

  @Column({ type: 'varchar', length: 500, nullable: true })
  description: string | null;

  @Column({ name: 'event_types', type: 'varchar', length: 32, array: true })
  eventTypes: OutboundEventType[];

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  @Column({ name: 'disabled_reason', type: 'varchar', length: 16, nullable: true })
  disabledReason: DisabledReason | null;

  /** Read only where a message is signed (the delivery claim): an endpoint loaded for a view never carries it. */
  @Column({ type: 'varchar', length: 100, select: false })
  secret: string;

  @Column({ name: 'previous_secret', type: 'varchar', length: 100, nullable: true, select: false })
  previousSecret: string | null;

  @Column({ name: 'previous_secret_expires_at', type: 'timestamptz', nullable: true })
  previousSecretExpiresAt: Date | null;

  /** Since when every attempt has failed; cleared by a success. Five days of it disables the endpoint. */
  @Column({ name: 'failing_since', type: 'timestamptz', nullable: true })
  failingSince: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  /** created_at in microseconds since the epoch (a Date keeps milliseconds): the position of a keyset cursor. */
  @VirtualColumn({ type: 'bigint', query: MICROSECONDS_OF_CREATED_AT })
  position: string;
}

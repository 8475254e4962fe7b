import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryGeneratedColumn } from 'typeorm';
import { OutboundDeliveryEntity } from './outbound-delivery.entity.js';

/** Every attempt, kept for the delivery log: never the response body beyond a short excerpt. */
@Entity('outbound_delivery_attempts')
@Index('idx_outbound_delivery_attempts_delivery', ['deliveryId', 'id'])
// A BRIN index, which TypeORM cannot declare: left alone by migration:generate.
@Index('idx_outbound_delivery_attempts_attempted_at', { synchronize: false })
export class OutboundDeliveryAttemptEntity {
  @PrimaryGeneratedColumn('identity', { type: 'bigint', primaryKeyConstraintName: 'pk_outbound_delivery_attempts' })
  id: string;

  @Column({ name: 'delivery_id', type: 'bigint' })
  deliveryId: string;

  @ManyToOne(() => OutboundDeliveryEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'delivery_id', foreignKeyConstraintName: 'fk_outbound_delivery_attempts_delivery' })
  delivery?: OutboundDeliveryEntity;

  @Column({ name: 'attempted_at', type: 'timestamptz' })
  attemptedAt: Date;

  @Column({ name: 'duration_ms', type: 'integer' })
  durationMs: number;

  @Column({ name: 'response_status', type: 'smallint', nullable: true })
  responseStatus: number | null;

  @Column({ type: 'varchar', length: 32, nullable: true })
  error: string | null;

  @Column({ name: 'response_excerpt', type: 'varchar', length: 256, nullable: true })
  responseExcerpt: string | null;
}

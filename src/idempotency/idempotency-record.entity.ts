import { Column, CreateDateColumn, Entity, Index, PrimaryColumn } from 'typeorm';

/** The stored outcome of one POST, keyed by (idempotency key, source). */
@Entity('idempotency_records')
@Index('idx_idempotency_records_expires_at', ['expiresAt'])
export class IdempotencyRecordEntity {
  /**
   * First in the primary key, as IdempotencyKeyFirst made it for a look-up that no longer exists (it learned the
   * source from api_keys); every statement now gives both columns, which either order serves.
   */
  @PrimaryColumn({ name: 'idempotency_key', type: 'varchar', length: 128 })
  idempotencyKey: string;

  @PrimaryColumn({ type: 'varchar', length: 63 })
  source: string;

  /** SHA-256 of method, path and the canonical JSON of the body. */
  @Column({ type: 'char', length: 64 })
  fingerprint: string;

  @Column({ name: 'response_status', type: 'smallint' })
  responseStatus: number;

  /** The JSON text exactly as first sent (jsonb would reorder its keys). */
  @Column({ name: 'response_body', type: 'text' })
  responseBody: string;

  @Column({ name: 'response_location', type: 'varchar', length: 255, nullable: true })
  responseLocation: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}

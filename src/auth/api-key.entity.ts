import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn, VirtualColumn } from 'typeorm';
import { MICROSECONDS_OF_CREATED_AT } from '../database/entity-sql.js';

@Entity('api_keys')
@Index('idx_api_keys_source', ['source', 'createdAt'])
export class ApiKeyEntity {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ type: 'varchar', length: 63 })
  source: string;

  @Column({ type: 'varchar', length: 200, nullable: true })
  name: string | null;

  /** SHA-256 of the whole key, hex. The plaintext exists only in the one response that issued it. */
  @Index('uq_api_keys_key_hash', { unique: true })
  @Column({ name: 'key_hash', type: 'char', length: 64, select: false })
  keyHash: string;

  @Column({ type: 'varchar', length: 12 })
  prefix: string;

  @Column({ type: 'varchar', length: 4 })
  last4: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  /** May lie in the future: a rotated key stays valid until the end of its grace period. */
  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;

  @Column({ name: 'replaced_by_id', type: 'uuid', nullable: true })
  replacedById: string | null;

  /** created_at in microseconds since the epoch (a Date keeps milliseconds): the position of a keyset cursor. */
  @VirtualColumn({ type: 'bigint', query: MICROSECONDS_OF_CREATED_AT })
  position: string;
}

import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export const AUDIT_ACTIONS = ['api_key.created', 'api_key.revoked', 'api_key.rotated', 'webhook_event.applied'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What an administrator changed, by whom (address) and when. Never a key, hash or token. */
@Entity('admin_audit_log')
@Index('idx_admin_audit_log_created', ['createdAt'])
export class AuditLogEntity {
  @PrimaryGeneratedColumn('identity', { type: 'bigint' })
  id: string;

  @Column({ type: 'varchar', length: 64 })
  action: AuditAction;

  @Column({ name: 'key_id', type: 'uuid', nullable: true })
  keyId: string | null;

  @Column({ type: 'varchar', length: 63, nullable: true })
  source: string | null;

  @Column({ name: 'remote_address', type: 'varchar', length: 64 })
  remoteAddress: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

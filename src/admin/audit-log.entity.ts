import { Column, CreateDateColumn, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

export const AUDIT_ACTIONS = [
  'api_key.created',
  'api_key.revoked',
  'api_key.rotated',
  'webhook_event.applied',
  'webhook_endpoint.enabled',
  'webhook_endpoint.disabled',
  'outbound_delivery.retried',
  'admin.created',
  'admin.updated',
  'admin_token.created',
  'admin_token.revoked',
  'admin.signed_in',
  'admin.sign_in_refused',
  'admin.signed_out',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** Field by field, a value before and after a change. */
export type AuditChanges = Record<string, { from: string | boolean | null; to: string | boolean | null }>;

/** Who did it: the break-glass ADMIN_TOKEN, an admin's personal token or console session, or the operator CLI. */
export const ACTOR_TYPES = ['bootstrap', 'token', 'session', 'cli'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/** What an administrator changed, who did it, from where and when. Never a key, hash or token. */
@Entity('admin_audit_log')
@Index('idx_admin_audit_log_created', ['createdAt'])
@Index('idx_admin_audit_log_actor', ['actorAdminId', 'id'])
@Index('idx_admin_audit_log_action', ['action', 'id'])
export class AuditLogEntity {
  @PrimaryGeneratedColumn('identity', { type: 'bigint' })
  id: string;

  @Column({ type: 'varchar', length: 64 })
  action: AuditAction;

  /** The API key concerned, for entries from before targets were recorded (and for api_key.* still). */
  @Column({ name: 'key_id', type: 'uuid', nullable: true })
  keyId: string | null;

  @Column({ type: 'varchar', length: 63, nullable: true })
  source: string | null;

  @Column({ name: 'remote_address', type: 'varchar', length: 64 })
  remoteAddress: string;

  @Column({ name: 'actor_type', type: 'varchar', length: 16, default: 'bootstrap' })
  actorType: ActorType;

  @Column({ name: 'actor_admin_id', type: 'uuid', nullable: true })
  actorAdminId: string | null;

  @Column({ name: 'actor_email', type: 'varchar', length: 320, nullable: true })
  actorEmail: string | null;

  @Column({ name: 'target_type', type: 'varchar', length: 32, nullable: true })
  targetType: string | null;

  @Column({ name: 'target_id', type: 'varchar', length: 255, nullable: true })
  targetId: string | null;

  /** What the change changed: each field with its value before and after, never a secret. */
  @Column({ type: 'jsonb', nullable: true })
  changes: AuditChanges | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}

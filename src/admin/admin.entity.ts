import { Check, Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn, PrimaryGeneratedColumn, VirtualColumn } from 'typeorm';
import { MICROSECONDS_OF_CREATED_AT } from '../database/entity-sql.js';

export const ADMIN_ROLES = ['viewer', 'operator', 'admin'] as const;
export type AdminRole = (typeof ADMIN_ROLES)[number];

/** A person who administers the gateway. Its email is unique whatever its case (uq_admins_email on lower(email)). */
@Entity('admins')
@Check('ck_admins_role', `role IN ('viewer', 'operator', 'admin')`)
@Index('uq_admins_email', { synchronize: false })
@Index('idx_admins_created', ['createdAt', 'id'])
export class AdminEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'pk_admins' })
  id: string;

  @Column({ type: 'varchar', length: 320 })
  email: string;

  @Column({ type: 'varchar', length: 200, nullable: true })
  name: string | null;

  @Column({ type: 'varchar', length: 16 })
  role: AdminRole;

  /** Disabled: every token and session of the admin stops on the next request. */
  @Column({ name: 'disabled_at', type: 'timestamptz', nullable: true })
  disabledAt: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'last_seen_at', type: 'timestamptz', nullable: true })
  lastSeenAt: Date | null;

  /** created_at in microseconds since the epoch (a Date keeps milliseconds): the position of a keyset cursor. */
  @VirtualColumn({ type: 'bigint', query: MICROSECONDS_OF_CREATED_AT })
  position: string;
}

/** An admin's personal token (`adm_tax_…`): only its SHA-256 is stored. */
@Entity('admin_tokens')
@Index('uq_admin_tokens_token_hash', ['tokenHash'], { unique: true })
@Index('idx_admin_tokens_admin', ['adminId', 'createdAt'])
export class AdminTokenEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'pk_admin_tokens' })
  id: string;

  @Column({ name: 'admin_id', type: 'uuid' })
  adminId: string;

  @ManyToOne(() => AdminEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'admin_id', foreignKeyConstraintName: 'fk_admin_tokens_admin' })
  admin?: AdminEntity;

  @Column({ type: 'varchar', length: 200, nullable: true })
  name: string | null;

  @Column({ name: 'token_hash', type: 'char', length: 64, select: false })
  tokenHash: string;

  @Column({ type: 'varchar', length: 16 })
  prefix: string;

  @Column({ type: 'varchar', length: 4 })
  last4: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;
}

/** A console session: the cookie's SHA-256, the CSRF token the page sends with its writes, and its two limits. */
@Entity('admin_sessions')
@Index('uq_admin_sessions_token_hash', ['tokenHash'], { unique: true })
@Index('idx_admin_sessions_expires', ['expiresAt'])
export class AdminSessionEntity {
  @PrimaryGeneratedColumn('uuid', { primaryKeyConstraintName: 'pk_admin_sessions' })
  id: string;

  @Column({ name: 'admin_id', type: 'uuid' })
  adminId: string;

  @ManyToOne(() => AdminEntity, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'admin_id', foreignKeyConstraintName: 'fk_admin_sessions_admin' })
  admin?: AdminEntity;

  @Column({ name: 'token_hash', type: 'char', length: 64 })
  tokenHash: string;

  @Column({ name: 'csrf_token', type: 'varchar', length: 64 })
  csrfToken: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'last_seen_at', type: 'timestamptz', default: () => 'now()' })
  lastSeenAt: Date;

  /** The absolute end (ADMIN_SESSION_MAX_SECONDS after sign-in). */
  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'ended_at', type: 'timestamptz', nullable: true })
  endedAt: Date | null;
}

/** An OpenID Connect sign-in under way: what the callback must find again (state, nonce, PKCE verifier). */
@Entity('admin_oidc_logins')
export class AdminOidcLoginEntity {
  @PrimaryColumn({ type: 'varchar', length: 64, primaryKeyConstraintName: 'pk_admin_oidc_logins' })
  state: string;

  @Column({ type: 'varchar', length: 64 })
  nonce: string;

  @Column({ name: 'code_verifier', type: 'varchar', length: 128 })
  codeVerifier: string;

  /** Who started it: the sign-ins under way per address are limited. */
  @Index('idx_admin_oidc_logins_address')
  @Column({ name: 'remote_address', type: 'varchar', length: 64, nullable: true })
  remoteAddress: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;
}

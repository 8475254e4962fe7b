import { Injectable } from '@nestjs/common';
import { Database, Queryable, Transaction } from '../database/database';
import { sql } from '../database/sql';
import type { AdminRole } from './admin.entity';

export interface AdminRow {
  id: string;
  email: string;
  name: string | null;
  role: AdminRole;
  disabledAt: Date | null;
  createdAt: Date;
  lastSeenAt: Date | null;
  /** created_at in microseconds since the epoch: the position of a keyset cursor. */
  position: string;
}

export interface AdminTokenRow {
  id: string;
  adminId: string;
  name: string | null;
  prefix: string;
  last4: string;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

/** An admin as a credential names it: who, with which role. */
export interface AuthenticatedAdmin {
  adminId: string;
  email: string;
  role: AdminRole;
}

const ADMIN = `a.id, a.email, a.name, a.role, a.disabled_at AS "disabledAt", a.created_at AS "createdAt", a.last_seen_at AS "lastSeenAt",
  (extract(epoch FROM a.created_at) * 1000000)::bigint::text AS position`;
const TOKEN = `t.id, t.admin_id AS "adminId", t.name, t.prefix, t.last4, t.created_at AS "createdAt", t.expires_at AS "expiresAt",
  t.revoked_at AS "revokedAt", t.last_used_at AS "lastUsedAt"`;

/** Nothing when the email is taken (uq_admins_email, whatever its case). */
const INSERT = sql(
  'admin-insert',
  `INSERT INTO admins AS a (email, name, role) VALUES ($1, $2, $3) ON CONFLICT (lower(email)) DO NOTHING RETURNING ${ADMIN}`,
);
const FIND = sql('admin-find', `SELECT ${ADMIN} FROM admins a WHERE a.id = $1`);
const FIND_FOR_UPDATE = sql('admin-find-for-update', `SELECT ${ADMIN} FROM admins a WHERE a.id = $1 FOR UPDATE`);
/** Oldest first, so a page never moves while admins are added; $1/$2 the cursor. */
const PAGE = sql(
  'admin-page',
  `SELECT ${ADMIN} FROM admins a
    WHERE $1::bigint IS NULL OR (a.created_at, a.id) > (to_timestamp($1::bigint / 1000000.0), $2::uuid)
    ORDER BY a.created_at, a.id LIMIT $3`,
);
/** $2 role, $3 name: null keeps each ($4 says whether the name changes); $5 disabled: null keeps it. */
const UPDATE = sql(
  'admin-update',
  `UPDATE admins a SET role = COALESCE($2, a.role), name = CASE WHEN $4 THEN $3 ELSE a.name END,
          disabled_at = CASE WHEN $5::boolean IS NULL THEN a.disabled_at WHEN $5 THEN COALESCE(a.disabled_at, now()) ELSE NULL END
    WHERE a.id = $1 RETURNING ${ADMIN}`,
);
const FIND_ENABLED_BY_EMAIL = sql('admin-find-enabled-by-email', `SELECT ${ADMIN} FROM admins a WHERE lower(a.email) = lower($1) AND a.disabled_at IS NULL`);

const INSERT_TOKEN = sql(
  'admin-token-insert',
  `INSERT INTO admin_tokens AS t (admin_id, name, token_hash, prefix, last4, expires_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${TOKEN}`,
);
const TOKENS_OF = sql('admin-token-list', `SELECT ${TOKEN} FROM admin_tokens t WHERE t.admin_id = $1 ORDER BY t.created_at DESC, t.id DESC`);
const FIND_TOKEN_FOR_UPDATE = sql('admin-token-find-for-update', `SELECT ${TOKEN} FROM admin_tokens t WHERE t.id = $1 FOR UPDATE`);
const REVOKE_TOKEN = sql('admin-token-revoke', `UPDATE admin_tokens t SET revoked_at = COALESCE(t.revoked_at, now()) WHERE t.id = $1 RETURNING ${TOKEN}`);

/**
 * A personal token's admin, if the token is live and its admin enabled: decided by the database's clock,
 * so a revocation or a disabled admin holds on the very next request on every instance. When the token
 * was last used (and the admin last seen) is written at most once a minute.
 */
const AUTHENTICATE_TOKEN = sql(
  'admin-token-authenticate',
  `WITH found AS (
     SELECT t.id AS token_id, a.id AS admin_id, a.email, a.role, t.last_used_at, a.last_seen_at
       FROM admin_tokens t JOIN admins a ON a.id = t.admin_id
      WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()) AND a.disabled_at IS NULL),
   token_used AS (
     UPDATE admin_tokens SET last_used_at = now() FROM found
      WHERE admin_tokens.id = found.token_id AND (found.last_used_at IS NULL OR found.last_used_at < now() - interval '1 minute')),
   admin_seen AS (
     UPDATE admins SET last_seen_at = now() FROM found
      WHERE admins.id = found.admin_id AND (found.last_seen_at IS NULL OR found.last_seen_at < now() - interval '1 minute'))
   SELECT admin_id AS "adminId", email, role FROM found`,
);

const INSERT_SESSION = sql(
  'admin-session-insert',
  `INSERT INTO admin_sessions (admin_id, token_hash, csrf_token, expires_at) VALUES ($1, $2, $3, now() + make_interval(secs => $4)) RETURNING id`,
);

/**
 * A console session's admin, if the session has not ended, not been idle for $2 seconds, not reached its
 * absolute end, and its admin is enabled. Its last use is written at most once a minute (more often when
 * the idle timeout is shorter than two minutes), the admin's at most once a minute.
 */
const AUTHENTICATE_SESSION = sql(
  'admin-session-authenticate',
  `WITH found AS (
     SELECT s.id AS session_id, s.csrf_token, s.last_seen_at AS session_seen, a.id AS admin_id, a.email, a.role, a.last_seen_at
       FROM admin_sessions s JOIN admins a ON a.id = s.admin_id
      WHERE s.token_hash = $1 AND s.ended_at IS NULL AND s.expires_at > now() AND s.last_seen_at > now() - make_interval(secs => $2)
        AND a.disabled_at IS NULL),
   session_seen AS (
     UPDATE admin_sessions SET last_seen_at = now() FROM found
      WHERE admin_sessions.id = found.session_id AND found.session_seen < now() - make_interval(secs => least(60, $2 / 2.0))),
   admin_seen AS (
     UPDATE admins SET last_seen_at = now() FROM found
      WHERE admins.id = found.admin_id AND (found.last_seen_at IS NULL OR found.last_seen_at < now() - interval '1 minute'))
   SELECT session_id AS "sessionId", csrf_token AS "csrfToken", admin_id AS "adminId", email, role FROM found`,
);
const END_SESSIONS_OF = sql('admin-session-end-all', 'UPDATE admin_sessions SET ended_at = now() WHERE admin_id = $1 AND ended_at IS NULL');
const END_SESSION = sql('admin-session-end', 'UPDATE admin_sessions SET ended_at = now() WHERE id = $1 AND ended_at IS NULL');
const PURGE_SESSIONS = sql('admin-session-purge', `DELETE FROM admin_sessions WHERE expires_at < now() - interval '1 day'`);

const INSERT_LOGIN = sql('admin-oidc-login-insert', `INSERT INTO admin_oidc_logins (state, nonce, code_verifier, expires_at) VALUES ($1, $2, $3, now() + interval '10 minutes')`);
/** Taken once: a second callback with the same state finds nothing. */
const TAKE_LOGIN = sql('admin-oidc-login-take', `DELETE FROM admin_oidc_logins WHERE state = $1 RETURNING nonce, code_verifier AS "codeVerifier", expires_at > now() AS live`);
const PURGE_LOGINS = sql('admin-oidc-login-purge', `DELETE FROM admin_oidc_logins WHERE expires_at < now()`);

/** Every query of the administrators' tables: accounts, personal tokens, console sessions, sign-ins under way. */
@Injectable()
export class AdminsRepository {
  constructor(private readonly db: Database) {}

  /** Null when an admin with that email (in any case) exists. */
  async insert(tx: Transaction, admin: { email: string; name: string | null; role: AdminRole }): Promise<AdminRow | null> {
    const [row] = await tx.query<AdminRow>(INSERT, [admin.email, admin.name, admin.role]);
    return row ?? null;
  }

  async find(db: Queryable, id: string, { forUpdate = false } = {}): Promise<AdminRow | null> {
    const [row] = await db.query<AdminRow>(forUpdate ? FIND_FOR_UPDATE : FIND, [id]);
    return row ?? null;
  }

  page(after: { position: string; id: string } | null, limit: number): Promise<AdminRow[]> {
    return this.db.query<AdminRow>(PAGE, [after?.position ?? null, after?.id ?? null, limit]);
  }

  async update(tx: Transaction, id: string, change: { role?: AdminRole; name?: string | null; disabled?: boolean }): Promise<AdminRow> {
    const [row] = await tx.query<AdminRow>(UPDATE, [id, change.role ?? null, change.name ?? null, change.name !== undefined, change.disabled ?? null]);
    return row;
  }

  async findEnabledByEmail(email: string): Promise<AdminRow | null> {
    const [row] = await this.db.query<AdminRow>(FIND_ENABLED_BY_EMAIL, [email]);
    return row ?? null;
  }

  async insertToken(tx: Transaction, token: { adminId: string; name: string | null; hash: string; prefix: string; last4: string; expiresAt: Date | null }): Promise<AdminTokenRow> {
    const [row] = await tx.query<AdminTokenRow>(INSERT_TOKEN, [token.adminId, token.name, token.hash, token.prefix, token.last4, token.expiresAt]);
    return row;
  }

  tokensOf(adminId: string): Promise<AdminTokenRow[]> {
    return this.db.query<AdminTokenRow>(TOKENS_OF, [adminId]);
  }

  async findTokenForUpdate(tx: Transaction, id: string): Promise<AdminTokenRow | null> {
    const [row] = await tx.query<AdminTokenRow>(FIND_TOKEN_FOR_UPDATE, [id]);
    return row ?? null;
  }

  async revokeToken(tx: Transaction, id: string): Promise<AdminTokenRow> {
    const [row] = await tx.query<AdminTokenRow>(REVOKE_TOKEN, [id]);
    return row;
  }

  async authenticateToken(hash: string): Promise<AuthenticatedAdmin | null> {
    const [row] = await this.db.query<AuthenticatedAdmin>(AUTHENTICATE_TOKEN, [hash]);
    return row ?? null;
  }

  async insertSession(tx: Transaction, session: { adminId: string; hash: string; csrfToken: string; maxSeconds: number }): Promise<string> {
    const [{ id }] = await tx.query<{ id: string }>(INSERT_SESSION, [session.adminId, session.hash, session.csrfToken, session.maxSeconds]);
    return id;
  }

  async authenticateSession(hash: string, idleSeconds: number): Promise<(AuthenticatedAdmin & { sessionId: string; csrfToken: string }) | null> {
    const [row] = await this.db.query<AuthenticatedAdmin & { sessionId: string; csrfToken: string }>(AUTHENTICATE_SESSION, [hash, idleSeconds]);
    return row ?? null;
  }

  async endSession(tx: Transaction, id: string): Promise<void> {
    await tx.query(END_SESSION, [id]);
  }

  async endSessionsOf(tx: Transaction, adminId: string): Promise<void> {
    await tx.query(END_SESSIONS_OF, [adminId]);
  }

  async insertLogin(login: { state: string; nonce: string; codeVerifier: string }): Promise<void> {
    await this.db.query(INSERT_LOGIN, [login.state, login.nonce, login.codeVerifier]);
  }

  /** The sign-in `state` started, once; null for a state never issued, already used or expired. */
  async takeLogin(state: string): Promise<{ nonce: string; codeVerifier: string } | null> {
    const [row] = await this.db.query<{ nonce: string; codeVerifier: string; live: boolean }>(TAKE_LOGIN, [state]);
    return row?.live ? { nonce: row.nonce, codeVerifier: row.codeVerifier } : null;
  }

  /** Sessions ended a day ago and sign-ins never finished. */
  async purge(): Promise<void> {
    await this.db.query(PURGE_SESSIONS);
    await this.db.query(PURGE_LOGINS);
  }
}

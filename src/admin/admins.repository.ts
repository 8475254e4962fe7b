import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { EntityManager, IsNull, Raw, Repository } from 'typeorm';
import { AdminEntity, AdminOidcLoginEntity, AdminRole, AdminSessionEntity, AdminTokenEntity } from './admin.entity.js';
import { Transactions } from '../database/transaction.js';

export type NewAdmin = Pick<AdminEntity, 'email' | 'name' | 'role'>;
export type NewAdminToken = Pick<AdminTokenEntity, 'adminId' | 'name' | 'tokenHash' | 'prefix' | 'last4' | 'expiresAt'>;

/** An admin as a credential names it: who, with which role. */
export interface AuthenticatedAdmin {
  adminId: AdminEntity['id'];
  email: AdminEntity['email'];
  role: AdminRole;
}

/** A personal token's admin, and when the token itself expires (null: never). */
export type AuthenticatedToken = AuthenticatedAdmin & { expiresAt: AdminTokenEntity['expiresAt'] };

/** The advisory lock namespace of an address's sign-in starts (docs/architecture.md, "Locks"). */
const SIGN_IN_LOCK_NAMESPACE = 7_340_220;

/** A console session as a request authenticated by it sees it. */
export type AuthenticatedSession = AuthenticatedAdmin & { sessionId: AdminSessionEntity['id']; csrfToken: AdminSessionEntity['csrfToken'] };

/**
 * A personal token's admin, if the token is live and its admin enabled: decided by the database's clock,
 * so a revocation or a disabled admin holds on the very next request on every instance. When the token
 * was last used (and the admin last seen) is written at most once a minute, in the same statement (a
 * data-modifying CTE).
 */
const AUTHENTICATE_TOKEN = `WITH found AS (
     SELECT t.id AS token_id, a.id AS admin_id, a.email, a.role, t.expires_at, t.last_used_at, a.last_seen_at
       FROM admin_tokens t JOIN admins a ON a.id = t.admin_id
      WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()) AND a.disabled_at IS NULL),
   token_used AS (
     UPDATE admin_tokens SET last_used_at = now() FROM found
      WHERE admin_tokens.id = found.token_id AND (found.last_used_at IS NULL OR found.last_used_at < now() - interval '1 minute')),
   admin_seen AS (
     UPDATE admins SET last_seen_at = now() FROM found
      WHERE admins.id = found.admin_id AND (found.last_seen_at IS NULL OR found.last_seen_at < now() - interval '1 minute'))
   SELECT admin_id AS "adminId", email, role, expires_at AS "expiresAt" FROM found`;

/**
 * A console session's admin, if the session has not ended, not been idle for $2 seconds, not reached its
 * absolute end, and its admin is enabled. Its last use is written at most once a minute (more often when
 * the idle timeout is shorter than two minutes), the admin's at most once a minute.
 */
const AUTHENTICATE_SESSION = `WITH found AS (
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
   SELECT session_id AS "sessionId", csrf_token AS "csrfToken", admin_id AS "adminId", email, role FROM found`;

/** Every query of the administrators' tables: accounts, personal tokens, console sessions, sign-ins under way. */
@Injectable()
export class AdminsRepository {
  constructor(
    @InjectRepository(AdminEntity) private readonly admins: Repository<AdminEntity>,
    @InjectRepository(AdminTokenEntity) private readonly tokens: Repository<AdminTokenEntity>,
    @InjectRepository(AdminSessionEntity) private readonly sessions: Repository<AdminSessionEntity>,
    @InjectRepository(AdminOidcLoginEntity) private readonly logins: Repository<AdminOidcLoginEntity>,
    private readonly transactions: Transactions,
  ) {}

  /** Null when an admin with that email (in any case) exists: uq_admins_email on lower(email) decides. */
  async insert(tx: EntityManager, admin: NewAdmin): Promise<AdminEntity | null> {
    const { raw } = (await tx.createQueryBuilder().insert().into(AdminEntity).values(admin).orIgnore().returning('id').execute()) as { raw: unknown };
    const [inserted] = raw as Array<{ id: string }>;
    return inserted ? tx.getRepository(AdminEntity).findOneByOrFail({ id: inserted.id }) : null;
  }

  /** `tx`: read in that transaction. */
  find(id: string, tx: EntityManager = this.admins.manager): Promise<AdminEntity | null> {
    return tx.getRepository(AdminEntity).findOneBy({ id });
  }

  /** Locked (FOR UPDATE) until `tx` ends. */
  findForUpdate(tx: EntityManager, id: string): Promise<AdminEntity | null> {
    return tx.getRepository(AdminEntity).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  /** Oldest first, so a page never moves while admins are added; `after` the cursor's position (created_at in µs) and id. */
  page(after: { position: string; id: string } | null, limit: number): Promise<AdminEntity[]> {
    const query = this.admins.createQueryBuilder('a');
    if (after) query.andWhere('(a.created_at, a.id) > (to_timestamp(CAST(:position AS bigint) / 1000000.0), CAST(:id AS uuid))', after);
    return query.orderBy('a.createdAt', 'ASC').addOrderBy('a.id', 'ASC').limit(limit).getMany();
  }

  /** Writes the fields `change` gives (undefined ones stay) and reads the admin back as stored. */
  async update(tx: EntityManager, id: string, change: Partial<Pick<AdminEntity, 'role' | 'name' | 'disabledAt'>>): Promise<AdminEntity> {
    const given = Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined));
    if (Object.keys(given).length > 0) await tx.getRepository(AdminEntity).update({ id }, given);
    return tx.getRepository(AdminEntity).findOneByOrFail({ id });
  }

  findEnabledByEmail(email: string): Promise<AdminEntity | null> {
    return this.admins.createQueryBuilder('a').where('lower(a.email) = lower(:email)', { email }).andWhere('a.disabledAt IS NULL').getOne();
  }

  async insertToken(tx: EntityManager, token: NewAdminToken): Promise<AdminTokenEntity> {
    const { id } = await tx.getRepository(AdminTokenEntity).save(tx.create(AdminTokenEntity, token));
    return tx.getRepository(AdminTokenEntity).findOneByOrFail({ id });
  }

  /** An admin's tokens, newest first. */
  tokensOf(adminId: string): Promise<AdminTokenEntity[]> {
    return this.tokens.find({ where: { adminId }, order: { createdAt: 'DESC', id: 'DESC' } });
  }

  findTokenForUpdate(tx: EntityManager, id: string): Promise<AdminTokenEntity | null> {
    return tx.getRepository(AdminTokenEntity).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  /** Revoked now, unless it was before: the first time stays. */
  async revokeToken(tx: EntityManager, id: string): Promise<AdminTokenEntity> {
    await tx.getRepository(AdminTokenEntity).update({ id, revokedAt: IsNull() }, { revokedAt: () => 'now()' });
    return tx.getRepository(AdminTokenEntity).findOneByOrFail({ id });
  }

  async authenticateToken(hash: string): Promise<AuthenticatedToken | null> {
    const [admin] = await this.tokens.query<AuthenticatedToken[]>(AUTHENTICATE_TOKEN, [hash]);
    return admin ?? null;
  }

  /** A new console session, ending `maxSeconds` from now at the latest; its id. */
  async insertSession(tx: EntityManager, session: Pick<AdminSessionEntity, 'adminId' | 'tokenHash' | 'csrfToken'> & { maxSeconds: number }): Promise<string> {
    const { adminId, tokenHash, csrfToken, maxSeconds } = session;
    const { raw } = (await tx
      .createQueryBuilder()
      .insert()
      .into(AdminSessionEntity)
      .values({ adminId, tokenHash, csrfToken, expiresAt: () => 'now() + make_interval(secs => :maxSeconds)' })
      .setParameter('maxSeconds', maxSeconds)
      .returning('id')
      .execute()) as { raw: unknown };
    return (raw as Array<{ id: string }>)[0].id;
  }

  async authenticateSession(hash: string, idleSeconds: number): Promise<AuthenticatedSession | null> {
    const [session] = await this.sessions.query<AuthenticatedSession[]>(AUTHENTICATE_SESSION, [hash, idleSeconds]);
    return session ?? null;
  }

  async endSession(tx: EntityManager, id: string): Promise<void> {
    await tx.getRepository(AdminSessionEntity).update({ id, endedAt: IsNull() }, { endedAt: () => 'now()' });
  }

  async endSessionsOf(tx: EntityManager, adminId: string): Promise<void> {
    await tx.getRepository(AdminSessionEntity).update({ adminId, endedAt: IsNull() }, { endedAt: () => 'now()' });
  }

  /**
   * A sign-in under way, for ten minutes, unless its address has `maxLive` under way already: then not
   * started, with the seconds until a place frees. The address's lock makes the count and the insert one
   * step for concurrent starts.
   */
  async insertLogin(
    login: Pick<AdminOidcLoginEntity, 'state' | 'nonce' | 'codeVerifier'> & { remoteAddress: string },
    maxLive: number,
  ): Promise<{ started: true } | { started: false; secondsLeft: number }> {
    return this.transactions.managed(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(${SIGN_IN_LOCK_NAMESPACE}, hashtext($1))`, [login.remoteAddress]);
      const live = { remoteAddress: login.remoteAddress, expiresAt: Raw((at) => `${at} > now()`) };
      if ((await tx.getRepository(AdminOidcLoginEntity).countBy(live)) >= maxLive) {
        // A place frees when the oldest start under way expires.
        const [{ seconds }] = await tx.query<Array<{ seconds: number }>>(
          `SELECT ceil(extract(epoch FROM min(expires_at) - now()))::int AS seconds FROM admin_oidc_logins WHERE remote_address = $1 AND expires_at > now()`,
          [login.remoteAddress],
        );
        return { started: false, secondsLeft: Math.max(1, seconds ?? 1) };
      }
      await tx.getRepository(AdminOidcLoginEntity).insert({ ...login, expiresAt: () => "now() + interval '10 minutes'" });
      return { started: true };
    });
  }

  /** The sign-in `state` started, taken once (a second callback with the same state finds nothing); null for one never issued, used or expired. */
  async takeLogin(state: string): Promise<Pick<AdminOidcLoginEntity, 'nonce' | 'codeVerifier'> | null> {
    const { raw } = (await this.logins
      .createQueryBuilder()
      .delete()
      .where({ state })
      .returning('nonce, code_verifier AS "codeVerifier", expires_at > now() AS live')
      .execute()) as { raw: unknown };
    const [login] = raw as Array<{ nonce: string; codeVerifier: string; live: boolean }>;
    return login?.live ? { nonce: login.nonce, codeVerifier: login.codeVerifier } : null;
  }

  /** Sessions ended a day ago and sign-ins never finished. */
  async purge(): Promise<void> {
    await this.sessions.createQueryBuilder().delete().where("expires_at < now() - interval '1 day'").execute();
    await this.logins.createQueryBuilder().delete().where('expires_at < now()').execute();
  }
}

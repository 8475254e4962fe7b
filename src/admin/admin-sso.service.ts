import { Injectable, Logger } from '@nestjs/common';
import { Interval } from '@nestjs/schedule';
import { randomBytes } from 'node:crypto';
import { AppError } from '../common/app-error.js';
import { generateOpaqueToken, hashOpaqueToken } from '../common/opaque-token.js';
import { AppConfig } from '../config/app-config.js';
import { AuditContext } from './admin-actor.js';
import { AdminsRepository } from './admins.repository.js';
import { AuditLogService } from './audit-log.service.js';
import { Transactions } from '../database/transaction.js';

/** Sign-ins under way (started, not finished, not expired: ten minutes) per address. */
export const MAX_SIGN_INS_UNDER_WAY = 20;

type OpenIdClient = typeof import('openid-client');
type Configuration = import('openid-client').Configuration;

export const SESSION_TOKEN_PREFIX = 'tdgs_';

/** Why a sign-in was refused: logged (never shown in detail to the browser) and audited. */
export type RefusalReason = 'unknown_state' | 'provider_error' | 'email_not_verified' | 'unknown_email';

export type SignInOutcome = { kind: 'signed_in'; sessionToken: string; maxAgeSeconds: number } | { kind: 'refused'; reason: RefusalReason };

/**
 * Console sign-in by OpenID Connect (README, "Single sign-on"): authorization code flow with PKCE, `state` and
 * `nonce`, through `openid-client`. What a sign-in started (state, nonce, PKCE verifier) is kept in the
 * database, so the callback may reach any instance and each state is used once. The verified `email`
 * claim must belong to an enabled administrator; the session is then a database row whose opaque token
 * only the browser's cookie holds.
 */
@Injectable()
export class AdminSsoService {
  private readonly logger = new Logger('AdminSso');
  /** Discovered once, on the first sign-in; forgotten after a failure so the next attempt discovers again. */
  private provider: Promise<{ lib: OpenIdClient; configuration: Configuration }> | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly transactions: Transactions,
    private readonly admins: AdminsRepository,
    private readonly audit: AuditLogService,
  ) {}

  get enabled(): boolean {
    return Boolean(this.config.OIDC_ISSUER_URL && this.config.OIDC_CLIENT_ID && this.config.OIDC_CLIENT_SECRET);
  }

  /** The provider's authorization URL for a new sign-in, and its `state` (which the browser's login cookie binds). */
  async start(redirectUri: string, remoteAddress: string): Promise<{ url: string; state: string }> {
    const { lib, configuration } = await this.discover();
    const state = lib.randomState();
    const nonce = lib.randomNonce();
    const codeVerifier = lib.randomPKCECodeVerifier();
    // Anyone may start a sign-in, and each start is a row: an address gets only so many under way at once.
    const start = await this.admins.insertLogin({ state, nonce, codeVerifier, remoteAddress }, MAX_SIGN_INS_UNDER_WAY);
    if (!start.started) {
      throw new AppError('RATE_LIMITED', 'Too many sign-ins started from this address; finish one or try again later', undefined, {
        'Retry-After': String(start.secondsLeft),
      });
    }
    const url = lib.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      scope: 'openid email',
      code_challenge: await lib.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url: url.href, state };
  }

  /**
   * The provider sent the browser back. `boundState` is the state of the login cookie: a callback whose
   * state this browser did not start (a forged link that would sign the victim in as someone else) is
   * refused like an unknown one.
   */
  async finish(callbackUrl: URL, boundState: string | undefined, context: Omit<AuditContext, 'actor'>): Promise<SignInOutcome> {
    const state = callbackUrl.searchParams.get('state') ?? '';
    const login = state && state === boundState ? await this.admins.takeLogin(state) : null;
    if (!login) return this.refuse(context, 'unknown_state', null);
    const { lib, configuration } = await this.discover();
    let claims: Record<string, unknown> | undefined;
    try {
      const tokens = await lib.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: login.codeVerifier,
        expectedState: state,
        expectedNonce: login.nonce,
        idTokenExpected: true,
      });
      claims = tokens.claims();
      // A provider may keep the email out of the ID token (OpenID Connect puts scope claims in userinfo
      // when an access token is issued); userinfo then answers for the same subject.
      if (claims && typeof claims.email !== 'string') claims = { ...(await lib.fetchUserInfo(configuration, tokens.access_token, String(claims.sub))) };
    } catch (error) {
      this.logger.warn({ error: (error as { code?: string }).code ?? (error as Error).name }, 'The OpenID provider did not complete a sign-in');
      return this.refuse(context, 'provider_error', null);
    }
    const email = typeof claims?.email === 'string' ? claims.email : null;
    if (!email || claims?.email_verified !== true) return this.refuse(context, 'email_not_verified', email);
    const admin = await this.admins.findEnabledByEmail(email);
    if (!admin) return this.refuse(context, 'unknown_email', email);

    const sessionToken = generateOpaqueToken(SESSION_TOKEN_PREFIX);
    const maxAgeSeconds = this.config.ADMIN_SESSION_MAX_SECONDS;
    await this.transactions.managed(async (tx) => {
      const sessionId = await this.admins.insertSession(tx, {
        adminId: admin.id,
        tokenHash: hashOpaqueToken(sessionToken),
        csrfToken: randomBytes(32).toString('base64url'),
        maxSeconds: maxAgeSeconds,
      });
      await this.audit.record(
        tx,
        { ...context, actor: { type: 'session', adminId: admin.id, email: admin.email } },
        {
          action: 'admin.signed_in',
          target: { type: 'admin_session', id: sessionId },
        },
      );
    });
    return { kind: 'signed_in', sessionToken, maxAgeSeconds };
  }

  /** Ends a console session: its cookie stops working on every instance at once. */
  signOut(context: AuditContext, sessionId: string): Promise<void> {
    return this.transactions.managed(async (tx) => {
      await this.admins.endSession(tx, sessionId);
      await this.audit.record(tx, context, { action: 'admin.signed_out', target: { type: 'admin_session', id: sessionId } });
    });
  }

  /** Ended sessions and sign-ins never finished. */
  @Interval('admin-sessions-purge', 600_000)
  async purge(): Promise<void> {
    await this.admins.purge();
  }

  private async refuse(context: Omit<AuditContext, 'actor'>, reason: RefusalReason, email: string | null): Promise<SignInOutcome> {
    this.logger.warn({ reason, remoteAddress: context.remoteAddress }, 'Console sign-in refused');
    await this.transactions.managed((tx) =>
      this.audit.record(tx, { ...context, actor: { type: 'session', adminId: null, email } }, { action: 'admin.sign_in_refused' }),
    );
    return { kind: 'refused', reason };
  }

  private discover(): Promise<{ lib: OpenIdClient; configuration: Configuration }> {
    this.provider ??= (async () => {
      // Loaded on the first sign-in, so a gateway without SSO never loads it.
      const lib = await import('openid-client');
      const issuer = new URL(this.config.OIDC_ISSUER_URL!);
      // The configuration allows plain HTTP only for a provider on a loopback address (a local trial).
      const options = issuer.protocol === 'http:' ? { execute: [lib.allowInsecureRequests] } : undefined;
      return { lib, configuration: await lib.discovery(issuer, this.config.OIDC_CLIENT_ID!, this.config.OIDC_CLIENT_SECRET, undefined, options) };
    })();
    this.provider.catch(() => {
      this.provider = null;
    });
    return this.provider;
  }
}

import { Controller, Get, HttpCode, Post, Req, Res, UseGuards } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiCookieAuth, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../common/app-error.js';
import { AppConfig } from '../config/app-config.js';
import { ApiProblems } from '../common/problem.dto.js';
import { ADMIN_SESSION_SCHEME } from '../openapi/api-description.js';
import { AdminContext, RequiresRole } from './admin-actor.js';
import type { AdminPrincipal, AuditContext } from './admin-actor.js';
import { AdminAuthGuard } from './admin-auth.guard.js';
import { cookiesMustBeSecure, cookieValue, loginCookie, LOGIN_COOKIE, publicOrigin, sessionCookie } from './admin-session.js';
import { AdminSsoService } from './admin-sso.service.js';

class AuthConfigDto {
  @ApiProperty({ description: 'Whether the console offers single sign-on (OIDC_ISSUER_URL, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are set)' })
  sso: boolean;
}

/**
 * The console's single sign-on: /login sends the browser to the OpenID provider, /callback brings it
 * back with a session cookie, /logout ends the session. Cookies are Secure unless the gateway is
 * reached over plain HTTP on a loopback address, where browsers would not keep a Secure cookie.
 */
@ApiTags('admin')
@Controller('admin/auth')
export class AdminAuthController {
  constructor(
    private readonly sso: AdminSsoService,
    private readonly appConfig: AppConfig,
  ) {}

  @Get('config')
  @ApiOperation({ operationId: 'getAdminAuthConfig', summary: 'How the console signs in', description: 'Public: whether single sign-on is configured.' })
  @ApiOkResponse({ type: AuthConfigDto })
  config(): AuthConfigDto {
    return { sso: this.sso.enabled };
  }

  @Get('login')
  @ApiExcludeEndpoint()
  async login(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    if (!this.sso.enabled) throw new AppError('NOT_FOUND', 'Single sign-on is not configured');
    const { url, state } = await this.sso.start(callbackUrl(this.appConfig.PUBLIC_URL, request), request.ip);
    await reply.header('Set-Cookie', loginCookie(state, isSecure(this.appConfig.PUBLIC_URL, request))).redirect(url, 302);
  }

  @Get('callback')
  @ApiExcludeEndpoint()
  async callback(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    if (!this.sso.enabled) throw new AppError('NOT_FOUND', 'Single sign-on is not configured');
    const url = new URL(request.url, callbackUrl(this.appConfig.PUBLIC_URL, request));
    const outcome = await this.sso.finish(url, cookieValue(request.headers.cookie, LOGIN_COOKIE), { remoteAddress: request.ip });
    const secure = isSecure(this.appConfig.PUBLIC_URL, request);
    const cookies = [loginCookie('', secure, 0)];
    if (outcome.kind === 'signed_in') cookies.push(sessionCookie(outcome.sessionToken, outcome.maxAgeSeconds, secure));
    await reply.header('Set-Cookie', cookies).redirect(outcome.kind === 'signed_in' ? '/admin' : '/admin?signin=refused', 302);
  }

  @Post('logout')
  @HttpCode(204)
  @UseGuards(AdminAuthGuard)
  @RequiresRole('viewer')
  @ApiCookieAuth(ADMIN_SESSION_SCHEME)
  @ApiOperation({
    operationId: 'signOutAdmin',
    summary: 'Sign out of the console',
    description: 'Ends the console session (on every instance at once) and clears its cookie; with a token, there is no session and nothing changes. Audited.',
  })
  @ApiNoContentResponse({ description: 'Signed out' })
  @ApiProblems('UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE')
  async logout(
    @AdminContext() principal: AdminPrincipal & AuditContext,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<void> {
    if (!principal.session) return;
    await this.sso.signOut(principal, principal.session.id);
    reply.header('Set-Cookie', sessionCookie('', 0, isSecure(this.appConfig.PUBLIC_URL, request)));
  }
}

/** Where the provider sends the browser back: PUBLIC_URL, else this gateway as the browser reached it (behind trusted proxies, as they say). */
function callbackUrl(publicUrl: string | undefined, request: FastifyRequest): string {
  return `${publicOrigin(publicUrl, request)}/admin/auth/callback`;
}

function isSecure(publicUrl: string | undefined, request: FastifyRequest): boolean {
  if (!publicUrl) return cookiesMustBeSecure(request.protocol, request.hostname);
  const origin = new URL(publicUrl);
  return cookiesMustBeSecure(origin.protocol.replace(':', ''), origin.hostname);
}

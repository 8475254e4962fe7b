import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiProblems } from '../common/problem.dto.js';
import { ADMIN_SESSION_SCHEME, ADMIN_TOKEN_SCHEME } from '../openapi/api-description.js';
import { AdminContext, RequiresRole } from './admin-actor.js';
import type { AdminPrincipal, AuditContext } from './admin-actor.js';
import { AdminAuthGuard } from './admin-auth.guard.js';
import { AdminsService } from './admins.service.js';
import { AuditLogService } from './audit-log.service.js';
import {
  AdminDto,
  AdminPageDto,
  AdminTokenDto,
  AdminTokenListDto,
  AuditLogPageDto,
  AuditLogQueryDto,
  CreateAdminDto,
  CreateAdminTokenDto,
  IssuedAdminTokenDto,
  MeDto,
  PageQueryDto,
  UpdateAdminDto,
} from './dto/admin.dto.js';

const ADMIN_ID = ApiParam({ name: 'id', description: "The administrator's id; an unknown id (or one that is not a UUID) is a 404", format: 'uuid' });

/** Administrators' accounts, their personal tokens, and the audit log of what every administrator did. */
@ApiTags('admin')
@ApiBearerAuth(ADMIN_TOKEN_SCHEME)
@ApiCookieAuth(ADMIN_SESSION_SCHEME)
@ApiProblems('UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE')
@UseGuards(AdminAuthGuard)
@Controller('admin')
export class AdminsController {
  constructor(
    private readonly admins: AdminsService,
    private readonly audit: AuditLogService,
  ) {}

  @Get('me')
  @ApiOperation({
    operationId: 'getAdminMe',
    summary: 'Who am I',
    description:
      'The caller as the audit log names it, and its role. A console session also gets the CSRF token its writes send; a session or an expiring token, the latest expiry a token it issues may have.',
  })
  @ApiOkResponse({ type: MeDto })
  me(@AdminContext() principal: AdminPrincipal): MeDto {
    const tokensExpireBy = principal.sessionTokenCeiling ?? principal.tokenExpiresAt;
    return {
      actor: principal.actor,
      role: principal.role,
      ...(principal.session ? { csrfToken: principal.session.csrfToken } : {}),
      ...(tokensExpireBy ? { tokensExpireBy: tokensExpireBy.toISOString() } : {}),
    };
  }

  @Post('admins')
  @ApiOperation({
    operationId: 'createAdmin',
    summary: 'Create an administrator',
    description: 'An account with a role; its owner then signs in by SSO (the email must match) or gets a personal token. Audited.',
  })
  @ApiCreatedResponse({ type: AdminDto })
  @ApiProblems('DUPLICATE_ADMIN', 'VALIDATION_ERROR')
  create(@AdminContext() context: AuditContext, @Body() body: CreateAdminDto) {
    return this.admins.create(context, body);
  }

  @Get('admins')
  @ApiOperation({ operationId: 'listAdmins', summary: 'List administrators', description: 'Oldest first.' })
  @ApiOkResponse({ type: AdminPageDto })
  @ApiProblems('VALIDATION_ERROR')
  list(@Query() query: PageQueryDto): Promise<AdminPageDto> {
    return this.admins.page(query.cursor, query.limit ?? 50);
  }

  @Get('admins/:id')
  @ApiOperation({ operationId: 'getAdmin', summary: 'Read an administrator', description: 'The admin object: role, whether disabled, when last seen.' })
  @ADMIN_ID
  @ApiOkResponse({ type: AdminDto })
  @ApiProblems('NOT_FOUND')
  get(@Param('id') id: string) {
    return this.admins.get(id);
  }

  @Patch('admins/:id')
  @ApiOperation({
    operationId: 'updateAdmin',
    summary: 'Change an administrator',
    description: "Role, name, or `disabled`: a disabled admin's tokens and console sessions stop on the very next request, on every instance. Audited.",
  })
  @ADMIN_ID
  @ApiOkResponse({ type: AdminDto })
  @ApiProblems('NOT_FOUND', 'VALIDATION_ERROR')
  update(@AdminContext() context: AuditContext, @Param('id') id: string, @Body() body: UpdateAdminDto) {
    return this.admins.update(context, id, body);
  }

  @Post('admins/:id/tokens')
  @RequiresRole('viewer')
  @ApiOperation({
    operationId: 'createAdminToken',
    summary: 'Issue a personal token',
    description:
      'By an `admin` for anyone, or by any administrator for themself. The token is in this response only (only its hash is stored); ' +
      'send it as `Authorization: Bearer adm_tax_…`. Audited.',
  })
  @ADMIN_ID
  @ApiCreatedResponse({ type: IssuedAdminTokenDto })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION', 'VALIDATION_ERROR')
  issueToken(@AdminContext() principal: AdminPrincipal & AuditContext, @Param('id') id: string, @Body() body: CreateAdminTokenDto) {
    return this.admins.issueToken(principal, id, body ?? {});
  }

  @Get('admins/:id/tokens')
  @ApiOperation({ operationId: 'listAdminTokens', summary: "List an administrator's tokens", description: 'Newest first; never a token or its hash.' })
  @ADMIN_ID
  @ApiOkResponse({ type: AdminTokenListDto })
  @ApiProblems('NOT_FOUND')
  async tokens(@Param('id') id: string): Promise<AdminTokenListDto> {
    return { data: await this.admins.tokensOf(id) };
  }

  @Post('admin-tokens/:tokenId/revoke')
  @RequiresRole('viewer')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'revokeAdminToken',
    summary: 'Revoke a personal token',
    description:
      "By an `admin`, or by the token's owner. Takes effect on the very next request, on every instance; revoking twice keeps the first `revokedAt`. Audited.",
  })
  @ApiParam({ name: 'tokenId', format: 'uuid', description: "The token's id" })
  @ApiOkResponse({ type: AdminTokenDto })
  @ApiProblems('NOT_FOUND')
  revokeToken(@AdminContext() principal: AdminPrincipal & AuditContext, @Param('tokenId') tokenId: string) {
    return this.admins.revokeToken(principal, tokenId);
  }

  @Get('audit-log')
  @ApiOperation({
    operationId: 'listAuditLog',
    summary: 'Read the audit log',
    description: 'Every administrator write, sign-in and sign-out, newest first, with who (actor), what (target) and from where. Reads are not recorded.',
  })
  @ApiOkResponse({ type: AuditLogPageDto })
  @ApiProblems('VALIDATION_ERROR')
  auditLog(@Query() query: AuditLogQueryDto): Promise<AuditLogPageDto> {
    return this.audit.page({ cursor: query.cursor, action: query.action, adminId: query.adminId }, query.limit ?? 50);
  }
}

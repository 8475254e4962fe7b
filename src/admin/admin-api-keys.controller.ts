import { Body, Controller, Get, HttpCode, Param, Post, Query, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiProblems } from '../common/problem.dto.js';
import { ADMIN_SESSION_SCHEME, ADMIN_TOKEN_SCHEME } from '../openapi/api-description.js';
import { AdminContext } from './admin-actor.js';
import type { AuditContext } from './admin-actor.js';
import { AdminApiKeysService } from './admin-api-keys.service.js';
import { AdminAuthGuard } from './admin-auth.guard.js';
import { ApiKeyListDto, ApiKeyResponseDto, CreateApiKeyDto, IssuedApiKeyResponseDto, ListApiKeysQueryDto, RotateApiKeyDto } from './dto/api-key.dto.js';

const KEY_ID = ApiParam({
  name: 'id',
  description: "The key's id; an unknown id (or one that is not a UUID) is a 404",
  example: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
});
const KEY_LINKS = {
  getApiKey: { operationId: 'getApiKey', parameters: { id: '$response.body#/id' }, description: 'Read the key' },
  revokeApiKey: { operationId: 'revokeApiKey', parameters: { id: '$response.body#/id' }, description: 'Revoke the key' },
  rotateApiKey: { operationId: 'rotateApiKey', parameters: { id: '$response.body#/id' }, description: 'Rotate the key' },
};

/** Client applications' API keys. Reading needs `viewer`, every change `admin`; each change is audited. */
@ApiTags('admin')
@ApiBearerAuth(ADMIN_TOKEN_SCHEME)
@ApiCookieAuth(ADMIN_SESSION_SCHEME)
// Every call: the credential (401), the role (403), the lockout after 10 failed attempts a minute per address (429), the database (503).
@ApiProblems('UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE')
@UseGuards(AdminAuthGuard)
@Controller('admin/api-keys')
export class AdminApiKeysController {
  constructor(private readonly keys: AdminApiKeysService) {}

  @Post()
  @ApiOperation({
    operationId: 'createApiKey',
    summary: 'Issue an API key',
    description:
      'Issues a key bound to `source`. The key itself is in this response only: it is stored as a hash and never shown again. Needs no idempotency key.',
  })
  @ApiCreatedResponse({ type: IssuedApiKeyResponseDto, links: KEY_LINKS })
  @ApiProblems('VALIDATION_ERROR')
  create(@AdminContext() context: AuditContext, @Body() body: CreateApiKeyDto) {
    return this.keys.create(context, body);
  }

  @Get()
  @ApiOperation({
    operationId: 'listApiKeys',
    summary: 'List API keys',
    description: 'Every key, or those of one source, newest first; never the key or its hash.',
  })
  @ApiOkResponse({ type: ApiKeyListDto })
  @ApiProblems('VALIDATION_ERROR')
  list(@Query() query: ListApiKeysQueryDto): Promise<ApiKeyListDto> {
    return this.keys.page({ source: query.source, cursor: query.cursor }, query.limit ?? 50);
  }

  @Get(':id')
  @ApiOperation({
    operationId: 'getApiKey',
    summary: 'Read an API key',
    description: 'The key object, with its status and when it was last used; never the key or its hash.',
  })
  @KEY_ID
  @ApiOkResponse({ type: ApiKeyResponseDto })
  @ApiProblems('NOT_FOUND', 'VALIDATION_ERROR')
  get(@Param('id') id: string) {
    return this.keys.get(id);
  }

  @Post(':id/revoke')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key',
    description: 'Takes effect on the very next request, on every instance. Revoking a revoked key answers 200 and keeps the first `revokedAt`. Takes no body.',
  })
  @KEY_ID
  @ApiOkResponse({ type: ApiKeyResponseDto })
  @ApiProblems('NOT_FOUND', 'VALIDATION_ERROR')
  revoke(@AdminContext() context: AuditContext, @Param('id') id: string) {
    return this.keys.revoke(context, id);
  }

  @Post(':id/rotate')
  @ApiOperation({
    operationId: 'rotateApiKey',
    summary: 'Rotate an API key',
    description:
      'Issues a successor with the same source, name and expiry; the old key keeps working for `gracePeriodSeconds`, then counts as revoked. ' +
      'Only an active key that was not rotated yet can be rotated (else 409 `INVALID_STATE_TRANSITION`). The body may be omitted.',
  })
  @KEY_ID
  @ApiCreatedResponse({ type: IssuedApiKeyResponseDto, description: 'The successor, with its key (shown this once)', links: KEY_LINKS })
  @ApiProblems('NOT_FOUND', 'INVALID_STATE_TRANSITION', 'VALIDATION_ERROR')
  rotate(@AdminContext() context: AuditContext, @Param('id') id: string, @Body() body: RotateApiKeyDto) {
    return this.keys.rotate(context, id, body?.gracePeriodSeconds ?? 0);
  }
}

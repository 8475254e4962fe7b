import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsBoolean, IsDateString, IsEmail, IsIn, IsOptional, IsString, IsUUID, Length, ValidateIf } from 'class-validator';
import { CursorParameter } from '../../common/cursor.js';
import { TEXT_PATTERN } from '../../common/json-body-parser.js';
import { PageLimit } from '../../common/page-limit.js';
import { OptionalField } from '../../common/validation.js';
import { ADMIN_ROLES } from '../admin.entity.js';
import type { AdminRole } from '../admin.entity.js';
import { ACTOR_TYPES, AUDIT_ACTIONS } from '../audit-log.entity.js';
import type { AuditAction } from '../audit-log.entity.js';

const ROLE_MESSAGE = `must be one of ${ADMIN_ROLES.join(', ')}`;
export const NEXT_CURSOR = { nullable: true, type: String, description: 'Pass as `cursor` for the next page; null on the last page' } as const;

/** `limit` and `cursor`: every admin list. */
export class PageQueryDto {
  @PageLimit(200, 50)
  limit?: number;

  @CursorParameter('The nextCursor of the previous page')
  cursor?: string;
}

export class CreateAdminDto {
  @ApiProperty({ example: 'ada@example.com', maxLength: 320, description: 'Unique whatever its case; the email claim single sign-on matches' })
  @IsEmail({}, { message: 'must be an email address' })
  @Length(3, 320)
  email: string;

  @ApiProperty({ enum: ADMIN_ROLES, description: 'viewer: every GET; operator: also retries deliveries and switches endpoints; admin: everything' })
  @IsIn(ADMIN_ROLES, { message: ROLE_MESSAGE })
  role: AdminRole;

  @ApiPropertyOptional({ example: 'Ada Lovelace', minLength: 1, maxLength: 200, pattern: TEXT_PATTERN })
  @OptionalField()
  @IsString()
  @Length(1, 200)
  name?: string;
}

export class UpdateAdminDto {
  @ApiPropertyOptional({ enum: ADMIN_ROLES })
  @OptionalField()
  @IsIn(ADMIN_ROLES, { message: ROLE_MESSAGE })
  role?: AdminRole;

  @ApiPropertyOptional({ nullable: true, type: String, minLength: 1, maxLength: 200, description: 'null clears it' })
  @ValidateIf((_object, value) => value !== undefined && value !== null)
  @IsString()
  @Length(1, 200)
  name?: string | null;

  @ApiPropertyOptional({ description: 'true: every token and console session of the admin stops on the next request; false: the account works again' })
  @OptionalField()
  @IsBoolean({ message: 'must be true or false' })
  disabled?: boolean;
}

export class AdminDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ example: 'ada@example.com' }) email: string;
  @ApiProperty({ nullable: true, type: String, example: 'Ada Lovelace' }) name: string | null;
  @ApiProperty({ enum: ADMIN_ROLES }) role: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) disabledAt: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time', description: 'Last request with a token or session of theirs (to the minute)' })
  lastSeenAt: string | null;
}

export class AdminPageDto {
  @ApiProperty({ type: [AdminDto] }) data: AdminDto[];
  @ApiProperty(NEXT_CURSOR) nextCursor: string | null;
}

export class CreateAdminTokenDto {
  @ApiPropertyOptional({ example: 'laptop', minLength: 1, maxLength: 200, pattern: TEXT_PATTERN, description: 'For people: where the token is used' })
  @OptionalField()
  @IsString()
  @Length(1, 200)
  name?: string;

  @ApiPropertyOptional({
    format: 'date-time',
    example: '2027-06-30T00:00:00.000Z',
    description:
      "ISO 8601, in the future; absent: never expires. Made with a token that expires: required, and no later than that token's expiry; in a console session: required, and at most ADMIN_TOKEN_MAX_TTL (P90D) from now",
  })
  @OptionalField()
  @IsDateString({ strict: true }, { message: 'must be an ISO 8601 date-time' })
  expiresAt?: string;
}

export class AdminTokenDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) adminId: string;
  @ApiProperty({ nullable: true, type: String, example: 'laptop' }) name: string | null;
  @ApiProperty({ example: 'adm_tax_4fQ9', description: "The token's first 12 characters" }) prefix: string;
  @ApiProperty({ example: 'x9Qz', description: "The token's last 4 characters" }) last4: string;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) expiresAt: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) revokedAt: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'date-time', description: 'Recorded at most once a minute' }) lastUsedAt: string | null;
}

export class IssuedAdminTokenDto extends AdminTokenDto {
  @ApiProperty({ example: 'adm_tax_4fQ9…', description: 'The token itself, sent as `Authorization: Bearer`. Shown once, never again.' }) token: string;
}

export class AdminTokenListDto {
  @ApiProperty({ type: [AdminTokenDto] }) data: AdminTokenDto[];
}

export class ActorDto {
  @ApiProperty({
    enum: ACTOR_TYPES,
    description: 'bootstrap: ADMIN_TOKEN; token: a personal token; session: the console signed in by SSO; cli: the operator CLI',
  })
  type: string;
  @ApiProperty({ nullable: true, type: String, format: 'uuid' }) adminId: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'ada@example.com' }) email: string | null;
}

export class MeDto {
  @ApiProperty({ type: ActorDto }) actor: ActorDto;
  @ApiProperty({ enum: ADMIN_ROLES }) role: string;
  @ApiPropertyOptional({ description: 'For a console session only: send it as `X-CSRF-Token` with every write' })
  csrfToken?: string;
  @ApiPropertyOptional({
    format: 'date-time',
    description:
      'The latest `expiresAt` of a personal token this caller may issue, which it must then give: ADMIN_TOKEN_MAX_TTL from now in a console session, or the expiry of the token making the request. Absent: no limit',
  })
  tokensExpireBy?: string;
}

export class AuditLogQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: AUDIT_ACTIONS, description: 'Only entries of this action' })
  @IsOptional()
  @IsIn(AUDIT_ACTIONS, { message: 'must be an audit action' })
  action?: AuditAction;

  @ApiPropertyOptional({ format: 'uuid', description: 'Only what this administrator did' })
  @IsOptional()
  @IsUUID('all', { message: 'must be a UUID' })
  adminId?: string;
}

/** A value before or after a change: text (a role, a name, possibly none) or a flag (disabled). */
const CHANGED_VALUE = { anyOf: [{ type: 'string', nullable: true }, { type: 'boolean' }] };

export class AuditEntryDto {
  @ApiProperty({ example: '42' }) id: string;
  @ApiProperty({ enum: AUDIT_ACTIONS }) action: string;
  @ApiProperty({ type: ActorDto }) actor: ActorDto;
  @ApiProperty({
    nullable: true,
    type: String,
    example: 'api_key',
    description: 'What was changed: api_key, admin, admin_token, webhook_endpoint, outbound_delivery, webhook_event',
  })
  targetType: string | null;
  @ApiProperty({ nullable: true, type: String }) targetId: string | null;
  @ApiProperty({ nullable: true, type: String, format: 'uuid', description: 'The API key an api_key.* entry concerns (as targetId)' }) keyId: string | null;
  @ApiProperty({ nullable: true, type: String, example: 'acme-erp' }) source: string | null;
  @ApiProperty({ example: '203.0.113.7', description: "The administrator's address (behind trusted proxies, the client's), or `cli` for the operator CLI" })
  remoteAddress: string;
  @ApiProperty({
    nullable: true,
    type: 'object',
    additionalProperties: { type: 'object', required: ['from', 'to'], properties: { from: CHANGED_VALUE, to: CHANGED_VALUE } },
    example: { role: { from: 'viewer', to: 'operator' } },
    description: 'What the change changed, field by field, each value before and after (admin.updated); never a secret. Null where the action says it all',
  })
  changes: Record<string, { from: string | boolean | null; to: string | boolean | null }> | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

export class AuditLogPageDto {
  @ApiProperty({ type: [AuditEntryDto] }) data: AuditEntryDto[];
  @ApiProperty(NEXT_CURSOR) nextCursor: string | null;
}

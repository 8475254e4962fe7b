import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { CurrentKey } from './authenticated-key.js';
import type { AuthenticatedKey } from './authenticated-key.js';

class MeResponseDto {
  @ApiProperty({ example: 'acme-erp' }) source: string;
  @ApiProperty({ format: 'uuid' }) keyId: string;
  @ApiProperty({ example: 'sk_tax_4fQ9a', description: 'The first 12 characters of the key' }) keyPrefix: string;
  @ApiProperty({ nullable: true, type: String, format: 'date-time' }) expiresAt: string | null;
}

@ApiTags('api keys')
@Controller('api/v1/me')
export class MeController {
  @Get()
  @ApiOperation({
    operationId: 'getMe',
    summary: 'Check the API key',
    description: 'Which source the key acts for (the `source` every document body must name) and until when it is valid.',
  })
  @ApiOkResponse({ type: MeResponseDto })
  me(@CurrentKey() key: AuthenticatedKey): MeResponseDto {
    return { source: key.source, keyId: key.id, keyPrefix: key.prefix, expiresAt: key.expiresAt?.toISOString() ?? null };
  }
}

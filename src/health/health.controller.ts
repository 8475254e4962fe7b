import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiProblems } from '../common/problem.dto.js';
import { Readiness } from './readiness.js';

const INDICATOR = { type: 'object', additionalProperties: { type: 'object', required: ['status'], properties: { status: { type: 'string', example: 'up' } } } };

const READY = { status: 'ok', info: { database: { status: 'up' } }, error: {}, details: { database: { status: 'up' } } } as const;

@ApiTags('operations')
@Controller('health')
export class HealthController {
  constructor(private readonly readiness: Readiness) {}

  @Get('live')
  @ApiOperation({ operationId: 'getLiveness', summary: 'Liveness probe', description: 'Answers 200 while the process is up; it does not touch the database.' })
  @ApiOkResponse({ schema: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } } })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  @ApiOperation({
    operationId: 'getReadiness',
    summary: 'Readiness probe',
    description:
      'Answers 200 when the database answers within 2 s on a connection of its own (outside the request pool), otherwise 503 `SERVICE_UNAVAILABLE` with `Retry-After: 5`; ' +
      '503 too from the moment the instance is asked to stop (SIGTERM), while it still serves requests for SHUTDOWN_DELAY_SECONDS.',
  })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['status', 'info', 'error', 'details'],
      properties: { status: { type: 'string', enum: ['ok'] }, info: INDICATOR, error: INDICATOR, details: INDICATOR },
      example: READY,
    },
  })
  @ApiProblems('SERVICE_UNAVAILABLE')
  async ready(): Promise<typeof READY> {
    await this.readiness.check();
    return READY;
  }
}

import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckResult, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { ApiProblems } from '../common/problem.dto';

const INDICATOR = { type: 'object', additionalProperties: { type: 'object', required: ['status'], properties: { status: { type: 'string', example: 'up' } } } };

@ApiTags('operations')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
  ) {}

  @Get('live')
  @ApiOperation({ operationId: 'getLiveness', summary: 'Liveness probe', description: 'Answers 200 while the process is up; it does not touch the database.' })
  @ApiOkResponse({ schema: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } } })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  // Its own 503 schema describes Terminus's body; the problem filter sends problem+json instead.
  @HealthCheck({ swaggerDocumentation: false })
  @ApiOperation({
    operationId: 'getReadiness',
    summary: 'Readiness probe',
    description: 'Answers 200 when the database answers within 2 s, otherwise 503 `SERVICE_UNAVAILABLE` with `Retry-After: 5`.',
  })
  @ApiOkResponse({
    schema: {
      type: 'object',
      required: ['status', 'info', 'error', 'details'],
      properties: { status: { type: 'string', enum: ['ok'] }, info: INDICATOR, error: INDICATOR, details: INDICATOR },
      example: { status: 'ok', info: { database: { status: 'up' } }, error: {}, details: { database: { status: 'up' } } },
    },
  })
  @ApiProblems('SERVICE_UNAVAILABLE')
  ready(): Promise<HealthCheckResult> {
    return this.health.check([() => this.database.pingCheck('database', { timeout: 2000 })]);
  }
}

import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { AppError } from '../common/app-error';
import { DatabaseUnavailable, databaseFailureOf } from '../common/database-failure';
import { ApiProblems } from '../common/problem.dto';
import { DatabaseProbe } from './database-probe';

const INDICATOR = { type: 'object', additionalProperties: { type: 'object', required: ['status'], properties: { status: { type: 'string', example: 'up' } } } };

const READY = { status: 'ok', info: { database: { status: 'up' } }, error: {}, details: { database: { status: 'up' } } } as const;

@ApiTags('operations')
@Controller('health')
export class HealthController {
  constructor(private readonly database: DatabaseProbe) {}

  @Get('live')
  @ApiOperation({ operationId: 'getLiveness', summary: 'Liveness probe', description: 'Answers 200 while the process is up; it does not touch the database.' })
  @ApiOkResponse({ schema: { type: 'object', required: ['status'], properties: { status: { type: 'string', enum: ['ok'] } } } })
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** A failed ping reaches the error filter as the driver's error, so the 503 names its cause. */
  @Get('ready')
  @ApiOperation({
    operationId: 'getReadiness',
    summary: 'Readiness probe',
    description:
      'Answers 200 when the database answers within 2 s on a connection of its own (outside the request pool), otherwise 503 `SERVICE_UNAVAILABLE` with `Retry-After: 5`.',
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
    await this.database.ping().catch((error: unknown) => {
      const failure = databaseFailureOf(error);
      throw failure ? new DatabaseUnavailable(failure, error) : new AppError('SERVICE_UNAVAILABLE', 'The database did not answer the readiness check');
    });
    return READY;
  }
}

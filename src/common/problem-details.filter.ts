import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable, PROBLEM_CONTENT_TYPE, toProblem } from './problem';

/** The shape of an error we log: never the SQL text or parameters TypeORM attaches to its errors. */
function loggable(error: unknown): Record<string, unknown> {
  if (typeof error !== 'object' || error === null) return { message: String(error) };
  const { name, message, code, stack } = error as Partial<Error> & { code?: unknown };
  return { type: name, message, code, stack };
}

/** One filter for every failure of every route, the HTTP layer's own errors and unknown routes included. */
@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    const problem = toProblem(exception, request.url.split('?')[0], String(request.id));
    if (problem.unexpected) {
      this.logger.error({ err: loggable(exception), requestId: request.id }, 'Unexpected error');
    } else if (isDatabaseUnavailable(exception)) {
      this.logger.warn({ requestId: request.id, code: (exception as { code?: unknown }).code }, 'Database unreachable');
    }
    reply.status(problem.body.status).headers(problem.headers).type(PROBLEM_CONTENT_TYPE).send(problem.body);
  }
}

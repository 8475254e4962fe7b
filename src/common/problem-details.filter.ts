import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppConfig } from '../config/app-config.js';
import { urlRedactorFor } from '../logging/redact-url.js';
import { AppError } from './app-error.js';
import { asDatabaseUnavailable, DatabaseUnavailable, describeFailure, requestKindOf } from './database-failure.js';
import { PROBLEM_CONTENT_TYPE, toProblem } from './problem.js';

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
  /** The problem's `instance` is the request path, which a client may have put a key into by mistake. */
  private readonly redactUrl: (url: string) => string;

  constructor(config: AppConfig) {
    this.redactUrl = urlRedactorFor(config);
  }

  catch(thrown: unknown, host: ArgumentsHost): void {
    // A failure of the database as TypeORM or pg reports it (a prepared statement's is one already): the
    // client's own connection failing is answered by nobody, below, before this could matter.
    const exception = thrown instanceof AppError || thrown instanceof HttpException ? thrown : asDatabaseUnavailable(thrown);
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const reply = host.switchToHttp().getResponse<FastifyReply>();
    if (request.raw.socket?.destroyed || reply.raw.writableEnded) {
      // The client went away (reset its connection mid-request, say): nobody is left to answer.
      this.logger.debug({ requestId: request.id, code: (exception as { code?: unknown }).code }, 'The client closed its connection before the answer');
      return;
    }
    const path = request.url.split('?')[0];
    const problem = toProblem(exception, this.redactUrl(path), String(request.id), requestKindOf(request.method, path));
    if (problem.unexpected) {
      this.logger.error({ err: loggable(exception), requestId: request.id }, 'Unexpected error');
    } else if (exception instanceof DatabaseUnavailable) {
      request.databaseFailure = exception.failure;
      // An expected condition, logged once per request and without a stack: an outage must not bury the log.
      // The driver's code and message (PostgreSQL's words or the socket's, never SQL) say what failed.
      const { code, message } = describeFailure(exception.cause);
      this.logger.warn({ requestId: request.id, cause: exception.failure, code, message }, `Database unavailable: ${exception.failure}`);
    }
    // Set here too: a few paths into this filter (a bad URL on the not-found router) skip the hooks.
    reply.header('X-Request-Id', request.id);
    reply.status(problem.body.status).headers(problem.headers).type(PROBLEM_CONTENT_TYPE).send(problem.body);
  }
}

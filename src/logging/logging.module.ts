import { DynamicModule, Module } from '@nestjs/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import pino, { type DestinationStream, type Level, type Logger, type LoggerOptions as Options } from 'pino';
import { AppConfig } from '../config/app-config.js';
import { AppLogger, PINO_LOGGER } from './app-logger.js';
import { urlRedactorFor } from './redact-url.js';

/** Headers that carry secrets; they are censored even if the serializers below are ever loosened. */
export const REDACTED_PATHS = ['req.headers["x-api-key"]', 'req.headers.authorization', 'req.headers["x-provider-signature"]', 'req.headers.cookie'];

function pinoOptions(config: AppConfig): Options {
  const redactUrl = urlRedactorFor(config);
  return {
    level: config.LOG_LEVEL,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: {
      // Log what identifies a request, not its headers or body.
      req: (req: FastifyRequest) => ({ id: req.id, method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }),
      // A refusal's line names its cause: the problem's code, and what stood in the way where that is more.
      res: (res: FastifyReply) => ({ statusCode: res.statusCode, ...res.request?.refusal }),
    },
  };
}

/**
 * A line per successful request would cost more than many requests do: those are debug only. A 503
 * is an expected condition (its cause is logged once by the error filter), not an error.
 */
const levelOf = (status: number): Level => (status >= 500 && status !== 503 ? 'error' : status >= 400 ? 'warn' : 'debug');

/** What a refusal's log line says of it beside its status (README, "Operations"). */
export interface LoggedRefusal {
  code: string;
  /** For the idempotency refusals and a replayed answer: the state of the request's X-Idempotency-Key. */
  idempotencyKey?: 'in_use' | 'reused' | 'replayed';
  /** For a 503: the database failure (DatabaseFailure) that caused it. */
  cause?: string;
}

const KEY_STATES: Partial<Record<string, LoggedRefusal['idempotencyKey']>> = { IDEMPOTENCY_KEY_IN_USE: 'in_use', IDEMPOTENCY_KEY_REUSED: 'reused' };
/** Every problem body starts with the fields of src/common/problem.ts in this order, code among them. */
const PROBLEM_CODE = /^\{"type":"about:blank","title":"[^"]*","status":\d+,"code":"([A-Z_]+)"/;

/**
 * The refusal as its answer says it, read from the problem body about to be sent: one place sees every
 * answer, those of the problem filter, of the HTTP layer and a replayed stored refusal alike.
 */
function refusalOf(request: FastifyRequest, reply: FastifyReply, payload: unknown): LoggedRefusal | undefined {
  const code = typeof payload === 'string' ? PROBLEM_CODE.exec(payload)?.[1] : undefined;
  if (code === undefined) return undefined;
  const idempotencyKey = reply.getHeader('idempotent-replayed') === 'true' ? 'replayed' : KEY_STATES[code];
  return { code, ...(idempotencyKey ? { idempotencyKey } : {}), ...(request.databaseFailure ? { cause: request.databaseFailure } : {}) };
}

/**
 * One line per answered request, written after the answer and only when its level is enabled. This
 * takes the place of a pino-http middleware, which would build a child logger (serialising the request)
 * and an AsyncLocalStorage scope for every request, logged or not. Lines written while handling a
 * request name its requestId themselves.
 */
export function registerRequestLog(fastify: FastifyInstance, logger: Logger): void {
  // Only refusals are looked at, and only when their line will be written.
  fastify.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode >= 400 && logger.isLevelEnabled(levelOf(reply.statusCode))) request.refusal = refusalOf(request, reply, payload);
    done(null, payload);
  });
  fastify.addHook('onResponse', (request, reply, done) => {
    const level = levelOf(reply.statusCode);
    if (logger.isLevelEnabled(level)) {
      const line = { req: request, res: reply, responseTime: Math.round(reply.elapsedTime) };
      logger[level](line, reply.statusCode >= 500 ? 'request errored' : 'request completed');
    }
    done();
  });
}

@Module({})
export class LoggingModule {
  /** `destination` lets a test read exactly what production would write to stdout. */
  static forRoot(config: AppConfig, destination?: DestinationStream): DynamicModule {
    const options = pinoOptions(config);
    return {
      module: LoggingModule,
      providers: [{ provide: PINO_LOGGER, useValue: destination ? pino(options, destination) : pino(options) }, AppLogger],
      exports: [PINO_LOGGER, AppLogger],
    };
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on a refused request whose log line will be written: what the line says of the refusal. */
    refusal?: LoggedRefusal;
  }
}

import { DynamicModule, Module } from '@nestjs/common';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import pino, { type DestinationStream, type Level, type Logger, type LoggerOptions as Options } from 'pino';
import { AppConfig } from '../config/app-config.js';
import { AppLogger, PINO_LOGGER } from './app-logger.js';
import { urlRedactorFor } from './redact-url.js';

/** Headers that carry secrets; they are censored even if the serializers below are ever loosened. */
export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-provider-signature"]',
  'req.headers.cookie',
];

function pinoOptions(config: AppConfig): Options {
  const redactUrl = urlRedactorFor(config);
  return {
    level: config.LOG_LEVEL,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: {
      // Log what identifies a request, not its headers or body.
      req: (req: FastifyRequest) => ({ id: req.id, method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }),
      res: (res: FastifyReply) => ({ statusCode: res.statusCode }),
    },
  };
}

/**
 * A line per successful request would cost more than many requests do: those are debug only. A 503
 * is an expected condition (its cause is logged once by the error filter), not an error.
 */
const levelOf = (status: number): Level => (status >= 500 && status !== 503 ? 'error' : status >= 400 ? 'warn' : 'debug');

/**
 * One line per answered request, written after the answer and only when its level is enabled. This
 * takes the place of a pino-http middleware, which would build a child logger (serialising the request)
 * and an AsyncLocalStorage scope for every request, logged or not. Lines written while handling a
 * request name its requestId themselves.
 */
export function registerRequestLog(fastify: FastifyInstance, logger: Logger): void {
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

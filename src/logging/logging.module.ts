import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import type { Options } from 'pino-http';
import { AppConfig } from '../config/app-config';
import { AppLogger } from './app-logger';

/** Headers that carry secrets; they are censored even if the serializers below are ever loosened. */
export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers["x-provider-signature"]',
  'req.headers.cookie',
];

function pinoHttpOptions(config: AppConfig): Options {
  return {
    level: config.LOG_LEVEL,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    genReqId: (req) => (req as { id?: string }).id ?? 'unknown',
    serializers: {
      // Log what identifies a request, not its headers or body.
      req: (req: { id: string; method: string; url: string; remoteAddress?: string }) => ({
        id: req.id,
        method: req.method,
        url: req.url,
        remoteAddress: req.remoteAddress,
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
    // A line per successful request would cost more than many requests do: those are debug only. A 503
    // is an expected condition (its cause is logged once by the error filter), not an error.
    customLogLevel: (_req, res, err) =>
      err || (res.statusCode >= 500 && res.statusCode !== 503) ? 'error' : res.statusCode >= 400 ? 'warn' : 'debug',
    // pino-http attaches a made-up Error, with a stack of its own internals, to every 5xx line: drop it.
    customErrorObject: (_req, _res, error, value: Record<string, unknown>) => {
      if (!/^failed with status code/.test(error.message)) return value;
      const { err: _synthetic, ...rest } = value;
      return rest;
    },
  };
}

@Module({})
export class LoggingModule {
  /** `destination` lets a test read exactly what production would write to stdout. */
  static forRoot(config: AppConfig, destination?: DestinationStream): DynamicModule {
    const options = pinoHttpOptions(config);
    return {
      module: LoggingModule,
      imports: [LoggerModule.forRoot({ pinoHttp: destination ? [options, destination] : options })],
      providers: [AppLogger],
      exports: [AppLogger],
    };
  }
}

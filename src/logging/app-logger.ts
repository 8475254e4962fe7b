import { Inject, Injectable, LoggerService } from '@nestjs/common';
import type { Level, Logger } from 'pino';

/** The process's pino logger, made by LoggingModule: one per application, so each test app has its own. */
export const PINO_LOGGER = Symbol('PINO_LOGGER');

/** Nest's start-up chatter: one line per module and per route, useful when debugging only. */
const START_UP_CONTEXTS = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer']);

/** A stack trace as Nest's own exception handlers pass it, as a string after the message. */
const isStack = (value: unknown): value is string => typeof value === 'string' && /\n\s*at /.test(value);

/**
 * Nest's LoggerService on pino: the context (the last optional parameter) becomes the `context` field,
 * an object message is merged into the line, an Error becomes `err`. Nest's start-up listing goes to
 * debug, so it never buries what matters.
 */
@Injectable()
export class AppLogger implements LoggerService {
  constructor(@Inject(PINO_LOGGER) private readonly pino: Logger) {}

  verbose(message: unknown, ...optionalParams: unknown[]): void {
    this.write('trace', message, optionalParams);
  }

  debug(message: unknown, ...optionalParams: unknown[]): void {
    this.write('debug', message, optionalParams);
  }

  log(message: unknown, ...optionalParams: unknown[]): void {
    const context = optionalParams[optionalParams.length - 1];
    this.write(typeof context === 'string' && START_UP_CONTEXTS.has(context) ? 'debug' : 'info', message, optionalParams);
  }

  warn(message: unknown, ...optionalParams: unknown[]): void {
    this.write('warn', message, optionalParams);
  }

  error(message: unknown, ...optionalParams: unknown[]): void {
    this.write('error', message, optionalParams);
  }

  fatal(message: unknown, ...optionalParams: unknown[]): void {
    this.write('fatal', message, optionalParams);
  }

  private write(level: Level, message: unknown, optionalParams: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const fields: Record<string, unknown> = {};
    const params = optionalParams.length > 0 ? optionalParams.slice(0, -1) : [];
    if (optionalParams.length > 0) fields.context = optionalParams[optionalParams.length - 1];
    if (message instanceof Error) {
      fields.err = message;
      this.pino[level](fields, ...(params as []));
    } else if (typeof message === 'object' && message !== null) {
      this.pino[level](Object.assign(fields, message), ...(params as []));
    } else if (level === 'error' && typeof message === 'string' && params.length === 1 && isStack(params[0])) {
      // Nest's exception handlers call error(message, stack, context).
      const err = new Error(message);
      err.stack = params[0];
      this.pino[level]({ ...fields, err });
    } else {
      this.pino[level](fields, message as string, ...(params as []));
    }
  }
}

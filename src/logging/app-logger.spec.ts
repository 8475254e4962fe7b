import pino from 'pino';
import { AppLogger } from './app-logger.js';

/** An AppLogger over a pino logger whose lines land in `lines`, as production writes them. */
function loggerAt(level: pino.Level) {
  const lines: Record<string, unknown>[] = [];
  const destination = { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) };
  return { logger: new AppLogger(pino({ level }, destination)), lines };
}

describe('AppLogger', () => {
  it('writes the context (the last parameter) as a field beside the message, at the method’s level', () => {
    const { logger, lines } = loggerAt('info');
    logger.log('Started', 'Metrics');
    logger.warn('Careful', 'Database');
    logger.error('Broken');
    expect(lines.map(({ level, context, msg }) => ({ level, context, msg }))).toEqual([
      { level: 30, context: 'Metrics', msg: 'Started' },
      { level: 40, context: 'Database', msg: 'Careful' },
      { level: 50, context: undefined, msg: 'Broken' },
    ]);
  });

  it('merges an object message into the line, and writes an Error as err', () => {
    const { logger, lines } = loggerAt('info');
    logger.warn({ port: 3000, host: '127.0.0.1' }, 'Listening', 'Server');
    logger.error(new Error('lost'), 'Pool');
    expect(lines[0]).toMatchObject({ port: 3000, host: '127.0.0.1', msg: 'Listening', context: 'Server' });
    expect(lines[1]).toMatchObject({ context: 'Pool', err: { type: 'Error', message: 'lost' } });
  });

  it('keeps the stack Nest’s exception handlers pass after the message as err', () => {
    const { logger, lines } = loggerAt('info');
    const stack = 'Error: boom\n    at handler (file.js:1:1)';
    logger.error('boom', stack, 'ExceptionsHandler');
    expect(lines[0]).toMatchObject({ context: 'ExceptionsHandler', err: { message: 'boom', stack } });
  });

  it('moves Nest’s start-up listing to debug, and writes nothing below the level', () => {
    const { logger, lines } = loggerAt('info');
    logger.log('AppModule dependencies initialized', 'InstanceLoader');
    logger.debug('detail', 'Anything');
    logger.verbose('more detail', 'Anything');
    expect(lines).toEqual([]);
    const verbose = loggerAt('debug');
    verbose.logger.log('AppModule dependencies initialized', 'InstanceLoader');
    expect(verbose.lines).toMatchObject([{ level: 20, context: 'InstanceLoader' }]);
  });
});

import 'reflect-metadata';
import { parseCommand, runCommand, USAGE, UsageError } from './cli/api-keys.command';
import { openOperatorDatabase, OperatorError } from './cli/operator-database';
import { AppError } from './common/app-error';
import { isDatabaseUnavailable } from './common/database-failure';
import { ConfigValidationError, loadConfig } from './config/app-config';
import { EmbeddedPostgresError } from './database/embedded-postgres-layout';
import { loadEnvFile } from './startup/env-file';

/**
 * Operator CLI for bootstrap and break-glass key management without HTTP:
 *   node dist/cli.js api-keys create|list|revoke …   (npm run cli -- … in development)
 * Results go to stdout, diagnostics to stderr. Exit codes: 0 done, 1 failed, 2 bad command line.
 */
const out = (text: string) => process.stdout.write(text);
const err = (text: string) => process.stderr.write(`${text}\n`);

function describe(error: unknown): string {
  if (error instanceof ConfigValidationError) return error.message;
  if (error instanceof AppError || error instanceof OperatorError || error instanceof EmbeddedPostgresError) return `error: ${error.message}`;
  if (isDatabaseUnavailable(error)) {
    const code = (error as { code?: unknown }).code;
    return `error: the database could not be reached${typeof code === 'string' ? ` (${code})` : ''}; check DATABASE_URL or DATA_DIR`;
  }
  return `error: ${error instanceof Error ? error.message : String(error)}`;
}

async function main(argv: string[]): Promise<number> {
  const command = await parseCommand(argv);
  if (command.name === 'help') {
    out(USAGE);
    return 0;
  }
  loadEnvFile();
  // Only `create` has a reason to start from an empty database (the first key of a new install).
  const database = await openOperatorDatabase(loadConfig(process.env), err, { create: command.name === 'create' });
  try {
    await runCommand(command, database.admin, out);
  } finally {
    await database.close();
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      err(`${error.message.split('\n').map((line) => `error: ${line}`).join('\n')}\n\n${USAGE.trimEnd()}`);
      process.exitCode = 2;
    } else {
      err(describe(error));
      process.exitCode = 1;
    }
  },
);

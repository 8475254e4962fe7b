import { parseArgs } from 'node:util';
import { AdminApiKeysService, IssuedKeyView } from '../admin/admin-api-keys.service';
import { CLI_CONTEXT } from '../admin/audit-log.service';
import { CreateApiKeyDto, ListApiKeysQueryDto } from '../admin/dto/api-key.dto';
import { ApiKeyView } from '../auth/api-keys.service';
import { AppError } from '../common/app-error';
import { createValidationPipe } from '../common/validation';

export const USAGE = `Usage:
  cli api-keys create --source <source> [--name <name>] [--expires-at <ISO 8601 date-time>]
  cli api-keys list [--source <source>]
  cli api-keys revoke <id>

The database is found as the gateway finds it: DATABASE_URL, or else the embedded
PostgreSQL under DATA_DIR (default ./.data), shared with a gateway running on it.
`;

/** What the audit log records as the address of a change made here. */

/** A mistake in the command line: exit code 2, with the usage. */
export class UsageError extends Error {}

export type Command =
  | { name: 'help' }
  | { name: 'create'; input: CreateApiKeyDto }
  | { name: 'list'; source?: string }
  | { name: 'revoke'; id: string };

const FLAGS: Record<string, string> = { source: '--source', name: '--name', expiresAt: '--expires-at' };

function usageError(error: AppError): UsageError {
  const lines = (error.errors ?? []).map((e) => `${FLAGS[e.field] ?? e.field} ${e.message}`);
  return new UsageError(lines.length ? lines.join('\n') : error.detail);
}

/** The REST API's DTOs through its own validation pipe: the CLI accepts exactly what the API accepts. */
async function validated<T extends object>(metatype: new () => T, value: object, type: 'body' | 'query'): Promise<T> {
  try {
    return await createValidationPipe().transform(value, { type, metatype });
  } catch (error) {
    throw error instanceof AppError && error.code === 'VALIDATION_ERROR' ? usageError(error) : error;
  }
}

/** parseArgs in strict mode: unknown options, missing values and stray arguments are usage errors. */
function strictly<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

const wantsHelp = (args: string[]) => args.some((arg) => arg === '--help' || arg === '-h');

/** Parses and validates the whole command line before any database is touched. */
export async function parseCommand(argv: string[]): Promise<Command> {
  const [group, action, ...rest] = argv;
  if (group === 'help' || wantsHelp(argv)) return { name: 'help' };
  if (group === undefined) throw new UsageError('no command given');
  if (group !== 'api-keys') throw new UsageError(`unknown command "${group}"`);
  if (action === undefined) throw new UsageError('no api-keys command given: create, list or revoke');
  switch (action) {
    case 'create': {
      const { values } = strictly(() =>
        parseArgs({ args: rest, strict: true, options: { source: { type: 'string' }, name: { type: 'string' }, 'expires-at': { type: 'string' } } }),
      );
      if (values.source === undefined) throw new UsageError('--source is required');
      const input = await validated(CreateApiKeyDto, { source: values.source, name: values.name, expiresAt: values['expires-at'] }, 'body');
      return { name: 'create', input };
    }
    case 'list': {
      const { values } = strictly(() => parseArgs({ args: rest, strict: true, options: { source: { type: 'string' } } }));
      const query = await validated(ListApiKeysQueryDto, { source: values.source }, 'query');
      return { name: 'list', source: query.source };
    }
    case 'revoke': {
      const { positionals } = strictly(() => parseArgs({ args: rest, strict: true, allowPositionals: true, options: {} }));
      if (positionals.length !== 1) throw new UsageError('revoke takes exactly one key id');
      return { name: 'revoke', id: positionals[0] };
    }
    default:
      throw new UsageError(`unknown api-keys command "${action}"`);
  }
}

const iso = (value: string | null) => (value ? value.replace(/\.\d{3}Z$/, 'Z') : 'never');
const label = (key: ApiKeyView) => `${key.prefix}…${key.last4}`;
/** Names are free text: no terminal control sequences from the database reach the operator's screen. */
const printable = (value: string | null) => (value ?? '').replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');

function table(rows: string[][]): string {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column])).join('  ').trimEnd()).join('\n') + '\n';
}

function created(key: IssuedKeyView): string {
  return [
    `Created an API key for source ${key.source}.`,
    '',
    `  id       ${key.id}`,
    `  name     ${printable(key.name) || '-'}`,
    `  expires  ${iso(key.expiresAt)}`,
    '',
    `  ${key.key}`,
    '',
    'This key is shown now and never again: the gateway stores only its hash.',
    'Store it in your secret manager before you close this terminal.',
    '',
  ].join('\n');
}

function listed(keys: ApiKeyView[], source?: string): string {
  if (keys.length === 0) return source ? `No API keys for source ${source}.\n` : 'No API keys.\n';
  const header = ['ID', 'SOURCE', 'STATUS', 'KEY', 'NAME', 'CREATED', 'EXPIRES', 'LAST USED'];
  return table([
    header,
    ...keys.map((k) => [k.id, k.source, k.status, label(k), printable(k.name) || '-', iso(k.createdAt), iso(k.expiresAt), iso(k.lastUsedAt)]),
  ]);
}

/** Runs a parsed command through the same service (and so the same rules and audit entries) as the REST API. */
export async function runCommand(command: Exclude<Command, { name: 'help' }>, admin: AdminApiKeysService, out: (text: string) => void): Promise<void> {
  try {
    switch (command.name) {
      case 'create':
        out(created(await admin.create(CLI_CONTEXT, command.input)));
        return;
      case 'list':
        out(listed((await admin.page({ source: command.source }, 200)).data, command.source));
        return;
      case 'revoke': {
        const startedAt = Date.now();
        const key = await admin.revoke(CLI_CONTEXT, command.id);
        const earlier = Date.parse(key.revokedAt!) < startedAt;
        out(
          earlier
            ? `API key ${key.id} (${key.source}, ${label(key)}) was already revoked at ${iso(key.revokedAt)}.\n`
            : `Revoked API key ${key.id} (${key.source}, ${label(key)}): requests with it get 401 from now on.\n`,
        );
        return;
      }
    }
  } catch (error) {
    // "Must be in the future" and the like are decided by the service, but they are still bad arguments.
    throw error instanceof AppError && error.code === 'VALIDATION_ERROR' ? usageError(error) : error;
  }
}

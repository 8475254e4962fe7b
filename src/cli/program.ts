import { Command, CommanderError, Option } from 'commander';
import { ADMIN_ROLES } from '../admin/admin.entity.js';
import { CreateAdminDto, CreateAdminTokenDto, PageQueryDto, UpdateAdminDto } from '../admin/dto/admin.dto.js';
import { CreateApiKeyDto, ListApiKeysQueryDto, RotateApiKeyDto } from '../admin/dto/api-key.dto.js';
import { AdminEndpointsQueryDto } from '../admin/dto/operations.dto.js';
import { AppError } from '../common/app-error.js';
import { createValidationPipe } from '../common/validation.js';
import { AdminDeliveriesQueryDto } from '../outbound-webhooks/dto/delivery.dto.js';
import { DELIVERY_STATUSES } from '../outbound-webhooks/outbound-delivery.entity.js';
import { ROOT_CLUSTERS_HOME } from '../database/root-clusters.js';
import { AnyCommand, Paging } from './commands.js';
import { EXIT, flagOf, UsageError } from './exit-codes.js';

export const BIN = 'tdg';

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

/** `help`: the parser printed help, and that is all (exit code 0); else a command to run. */
export type Parsed = { kind: 'help' } | { kind: 'run'; command: AnyCommand; json: boolean };

const EPILOG = `
Every command takes --json: stdout then carries exactly the REST API's answer
(one JSON document; lists as { "data", "nextCursor" }), and a failure is one
problem+json object on stderr.

The database is found as the gateway finds it: DATABASE_URL, else the PG*
variables, else the embedded PostgreSQL under DATA_DIR (default ./.data),
shared with a gateway running on it. Changes are audited with the actor type
"cli" and the address "cli". The clusters commands need no database.

Exit codes:
  ${EXIT.OK}  done
  ${EXIT.FAILED}  failed unexpectedly, or the configuration is invalid
  ${EXIT.USAGE}  bad command line, or arguments the REST API refuses (422)
  ${EXIT.NOT_FOUND}  no such key, administrator, token, endpoint, delivery or cluster (404)
  ${EXIT.CONFLICT}  the state does not allow it, or a duplicate (409)
  ${EXIT.DATABASE}  the database cannot be used: unreachable, no cluster in DATA_DIR,
     or its schema behind with MIGRATIONS_RUN=false (503)
  ${EXIT.FINDINGS}  archive verify found an alteration (each finding is printed)
`;

const JSON_HELP = "print the REST API's JSON answer on stdout, and a failure as problem+json on stderr";
const CLUSTERS_JSON_HELP = 'print the answer as one JSON document on stdout (docs/cli.md), and a failure as problem+json on stderr';

/** The commands that run something: those without commands of their own. */
export const leavesOf = (command: Command): Command[] => (command.commands.length ? command.commands.flatMap(leavesOf) : [command]);

/** The flags pagingOptions adds, as commander hands them to an action. */
type PagingFlags = { limit?: string; cursor?: string; all?: boolean };

function pagingOptions(command: Command): Command {
  return command
    .option('--limit <n>', 'items per page, 1 to 200 (default 50)')
    .addOption(new Option('--cursor <cursor>', 'the nextCursor of the page before').conflicts('all'))
    .option('--all', 'every page, one after the other');
}

/** `tdg keys issue`, from the action's Command: for "Run … --help". */
function pathOf(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

const usageHint = (command: Command) => `Run '${pathOf(command)} --help' for usage.`;

/** The REST API's DTOs through its own validation pipe: the CLI accepts exactly what the API accepts. */
async function validated<T extends object>(command: Command, metatype: new () => T, value: Record<string, unknown>, type: 'body' | 'query'): Promise<T> {
  const given = Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined));
  try {
    const dto = (await createValidationPipe().transform(given, { type, metatype })) as T;
    return Object.fromEntries(Object.entries(dto).filter(([, v]) => v !== undefined)) as T;
  } catch (error) {
    if (!(error instanceof AppError) || error.code !== 'VALIDATION_ERROR') throw error;
    const errors = (error.errors ?? []).map((e) => ({ field: flagOf(e.field), message: e.message }));
    throw new UsageError('The command line is not valid', errors, usageHint(command));
  }
}

/** A command line has only text: turning it into the number a JSON body would carry is the CLI's part; the range is the DTO's. */
function integer(command: Command, flag: string, value: string): number {
  if (!/^-?\d+$/.test(value)) throw new UsageError('The command line is not valid', [{ field: flag, message: 'must be an integer' }], usageHint(command));
  return Number(value);
}

/** A list's query DTO (its filters with `limit` and `cursor`), validated in one pass so every bad flag is named at once. */
async function listQuery<T extends PageQueryDto>(
  command: Command,
  metatype: new () => T,
  filters: Record<string, unknown>,
  options: PagingFlags,
): Promise<{ filter: Omit<T, 'limit' | 'cursor'>; paging: Paging }> {
  const { limit, cursor, ...filter } = await validated(command, metatype, { ...filters, limit: options.limit, cursor: options.cursor }, 'query');
  return { filter, paging: { limit: limit ?? 50, ...(cursor !== undefined ? { cursor } : {}), all: options.all === true } };
}

/**
 * The command tree. Each action validates its options with the REST API's DTO and hands the command to
 * `run`; nothing touches the database before the whole command line is known to be good.
 */
export function buildProgram(io: Io, run: (command: AnyCommand, json: boolean) => void): Command {
  const program = new Command(BIN)
    .description(
      'Operator CLI of the Tax Document Gateway: API keys, administrators and their tokens, push endpoints and deliveries, on the database directly.',
    )
    .exitOverride()
    // The errors are printed by the caller (a line, or problem+json with --json); help goes to stdout.
    .configureOutput({ writeOut: (text) => io.out(text), writeErr: () => undefined, outputError: () => undefined })
    .addHelpText('after', EPILOG);

  const done = (command: Command, parsed: AnyCommand) => run(parsed, command.opts<{ json?: boolean }>().json === true);

  const keys = program.command('keys').alias('api-keys').description('API keys of client applications (sources)');
  keys
    .command('issue')
    .description('issue an API key for a source; the key is printed once, never again')
    .alias('create')
    .requiredOption('--source <source>', 'the client application the key acts for, e.g. acme-erp (required)')
    .option('--name <name>', 'what the key is for, for people')
    .option('--expires-at <date-time>', 'ISO 8601 date-time in the future; without it the key never expires')
    .addHelpText('after', `\nExample:\n  ${BIN} keys issue --source acme-erp --name "ERP prod" --expires-at 2027-12-31T00:00:00Z`)
    .action(async (options: { source: string; name?: string; expiresAt?: string }, command: Command) => {
      const input = await validated(command, CreateApiKeyDto, { source: options.source, name: options.name, expiresAt: options.expiresAt }, 'body');
      done(command, { name: 'keys issue', input });
    });
  pagingOptions(
    keys.command('list').description('list API keys, newest first; never a key or its hash').option('--source <source>', 'only the keys of this source'),
  ).action(async (options: PagingFlags & { source?: string }, command: Command) => {
    const { filter, paging } = await listQuery(command, ListApiKeysQueryDto, { source: options.source }, options);
    done(command, { name: 'keys list', ...filter, paging });
  });
  keys
    .command('rotate')
    .description('issue a successor (same source, name and expiry), printed once; the old key works on for the grace period')
    .argument('<id>', "the key's id")
    .option('--grace-period-seconds <seconds>', 'how long the old key keeps working, 0 to 86400', '0')
    .action(async (id: string, options: { gracePeriodSeconds: string }, command: Command) => {
      const body = await validated(
        command,
        RotateApiKeyDto,
        { gracePeriodSeconds: integer(command, '--grace-period-seconds', options.gracePeriodSeconds) },
        'body',
      );
      done(command, { name: 'keys rotate', id, gracePeriodSeconds: body.gracePeriodSeconds ?? 0 });
    });
  keys
    .command('revoke')
    .description('revoke an API key: the next request with it gets 401')
    .argument('<id>', "the key's id")
    .action((id: string, _options, command: Command) => done(command, { name: 'keys revoke', id }));

  const admins = program.command('admins').description('administrators and their personal tokens');
  admins
    .command('create')
    .description('create an administrator account')
    .requiredOption('--email <email>', 'unique whatever its case; the email single sign-on matches (required)')
    .requiredOption('--role <role>', `${ADMIN_ROLES.join(', ')} (required)`)
    .option('--name <name>', 'for people')
    .action(async (options: { email: string; role: string; name?: string }, command: Command) => {
      const input = await validated(command, CreateAdminDto, { email: options.email, role: options.role, name: options.name }, 'body');
      done(command, { name: 'admins create', input });
    });
  pagingOptions(admins.command('list').description('list administrators, oldest first')).action(async (options: PagingFlags, command: Command) => {
    done(command, { name: 'admins list', paging: (await listQuery(command, PageQueryDto, {}, options)).paging });
  });
  admins
    .command('update')
    .description("change an administrator's role, name, or whether the account works")
    .argument('<id>', "the administrator's id")
    .option('--role <role>', ADMIN_ROLES.join(', '))
    .option('--name <name>', 'a new name')
    .option('--no-name', 'clear the name')
    .addOption(new Option('--disable', 'stop the account: its tokens and console sessions fail from the next request').conflicts('enable'))
    .option('--enable', 'let a disabled account work again')
    .action(async (id: string, options: { role?: string; name?: string | false; disable?: boolean; enable?: boolean }, command: Command) => {
      const disabled = options.disable ? true : options.enable ? false : undefined;
      const name = options.name === false ? null : options.name;
      if (options.role === undefined && name === undefined && disabled === undefined) {
        throw new UsageError('nothing to change: give --role, --name, --no-name, --disable or --enable', [], usageHint(command));
      }
      const change = await validated(command, UpdateAdminDto, { role: options.role, name, disabled }, 'body');
      done(command, { name: 'admins update', id, change });
    });

  const tokens = admins.command('tokens').description("administrators' personal tokens (sent as Authorization: Bearer adm_tax_…)");
  tokens
    .command('issue')
    .description('issue a personal token for an administrator; the token is printed once, never again')
    .argument('<admin-id>', "the administrator's id")
    .option('--name <name>', 'where the token is used, for people')
    .option('--expires-at <date-time>', 'ISO 8601 date-time in the future; without it the token never expires')
    .action(async (adminId: string, options: { name?: string; expiresAt?: string }, command: Command) => {
      const input = await validated(command, CreateAdminTokenDto, { name: options.name, expiresAt: options.expiresAt }, 'body');
      done(command, { name: 'admins tokens issue', adminId, input });
    });
  tokens
    .command('list')
    .description("list an administrator's tokens, newest first; never a token or its hash")
    .argument('<admin-id>', "the administrator's id")
    .action((adminId: string, _options, command: Command) => done(command, { name: 'admins tokens list', adminId }));
  tokens
    .command('revoke')
    .description('revoke a personal token: the next request with it gets 401')
    .argument('<token-id>', "the token's id")
    .action((tokenId: string, _options, command: Command) => done(command, { name: 'admins tokens revoke', tokenId }));

  const endpoints = program.command('endpoints').description("client applications' push notification endpoints");
  pagingOptions(
    endpoints.command('list').description("list every source's push endpoints").option('--source <source>', 'only the endpoints of this source'),
  ).action(async (options: PagingFlags & { source?: string }, command: Command) => {
    const { filter, paging } = await listQuery(command, AdminEndpointsQueryDto, { source: options.source }, options);
    done(command, { name: 'endpoints list', ...filter, paging });
  });
  endpoints
    .command('enable')
    .description('resume an endpoint and its waiting deliveries')
    .argument('<id>', "the endpoint's id")
    .action((id: string, _options, command: Command) => done(command, { name: 'endpoints enable', id }));
  endpoints
    .command('disable')
    .description('stop a misbehaving endpoint (disabledReason "admin": its client cannot enable it again)')
    .argument('<id>', "the endpoint's id")
    .action((id: string, _options, command: Command) => done(command, { name: 'endpoints disable', id }));

  const deliveries = program.command('deliveries').description('push deliveries of feed events to the endpoints');
  pagingOptions(
    deliveries
      .command('list')
      .description('list push deliveries of every source, newest first')
      .option('--source <source>', 'only those of this source')
      .option('--status <status>', DELIVERY_STATUSES.join(', '))
      .option('--attention', 'only those that need a look: failed, or pending after a failed attempt')
      .option('--document-id <id>', "only the deliveries of this document's events"),
  ).action(async (options: PagingFlags & { source?: string; status?: string; attention?: boolean; documentId?: string }, command: Command) => {
    // As the query string would carry it: the DTO turns 'true' into true.
    const filters = { source: options.source, status: options.status, attention: options.attention ? 'true' : undefined, documentId: options.documentId };
    const { filter, paging } = await listQuery(command, AdminDeliveriesQueryDto, filters, options);
    done(command, { name: 'deliveries list', filter, paging });
  });
  deliveries
    .command('retry')
    .description('attempt a failed or pending delivery again now, from the start of the retry schedule')
    .argument('<id>', "the delivery's id")
    .action((id: string, _options, command: Command) => done(command, { name: 'deliveries retry', id }));

  const archive = program.command('archive').description('the verifiable archive of every document and status change (docs/archive.md)');
  archive
    .command('verify')
    .description(
      'check every checkpoint, entry, feed event and document against the archive (or, with --file, an export, with no database); exits 6 with each finding',
    )
    .option('--file <file>', 'verify this export (tdg archive export) instead of the database')
    .option('--key <verifierKey>', "the archive's note verifier key to check checkpoints with (default: the configured signing key's)")
    .option(
      '--state <file>',
      'a file keeping the checkpoint the last clean run verified: the log must still hold it (a rebuilt log does not); updated after a clean run',
    )
    .action((options: { file?: string; key?: string; state?: string }, command: Command) => {
      const given = { ...(options.key !== undefined ? { key: options.key } : {}), ...(options.state !== undefined ? { state: options.state } : {}) };
      done(command, options.file !== undefined ? { name: 'archive verify file', file: options.file, ...given } : { name: 'archive verify', ...given });
    });
  archive
    .command('export')
    .description('write every entry and checkpoint, with the verifier key, into one new file that archive verify --file checks')
    .argument('<file>', 'the file to write (must not exist)')
    .option('--key <verifierKey>', "the verifier key to name in the file (default: the configured signing key's)")
    .action((file: string, options: { key?: string }, command: Command) =>
      done(command, { name: 'archive export', file, ...(options.key !== undefined ? { key: options.key } : {}) }),
    );

  const clusters = program
    .command('clusters')
    .description(`embedded clusters left under ${ROOT_CLUSTERS_HOME} by starts as root whose DATA_DIR is gone; no database needed`);
  const dirOption = () => new Option('--dir <dir>', 'the directory the clusters are in').default(ROOT_CLUSTERS_HOME);
  clusters
    .command('list')
    .description('every cluster there, its state (linked, running, orphaned, unrecorded), size and DATA_DIR')
    .addOption(dirOption())
    .action((options: { dir: string }, command: Command) => done(command, { name: 'clusters list', dir: options.dir }));
  clusters
    .command('prune')
    .description('remove the orphaned clusters, or the one named, after asking; never one a DATA_DIR links to or a running postmaster uses')
    .argument('[cluster]', 'only this cluster: its id (see list), or the DATA_DIR it belonged to')
    .addOption(dirOption())
    .option('--yes', 'remove without asking (needed where there is no terminal to ask in)')
    .option('--unrecorded', 'also remove the clusters that do not record their DATA_DIR (made by an earlier version; see list)')
    .action((cluster: string | undefined, options: { dir: string; yes?: boolean; unrecorded?: boolean }, command: Command) => {
      done(command, {
        name: 'clusters prune',
        dir: options.dir,
        yes: options.yes === true,
        unrecorded: options.unrecorded === true,
        ...(cluster === undefined ? {} : { cluster }),
      });
    });

  // Every command that runs something takes --json, listed last in its help.
  for (const command of leavesOf(program)) command.option('--json', command.parent === clusters ? CLUSTERS_JSON_HELP : JSON_HELP);
  return program;
}

/** The command the words in `argv` name (`tdg admins tokens`), as far as they name one. */
function commandAt(program: Command, argv: string[]): Command {
  let current = program;
  for (const word of argv) {
    if (word.startsWith('-')) continue;
    const next = current.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (!next) break;
    current = next;
  }
  return current;
}

/** Parses and validates the whole command line; a mistake in it is a UsageError. */
export async function parseCommandLine(argv: string[], io: Io): Promise<Parsed> {
  let parsed: Parsed | undefined;
  const program = buildProgram(io, (command, json) => (parsed = { kind: 'run', command, json }));
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    if (error.exitCode === 0) return { kind: 'help' };
    const at = commandAt(program, argv);
    // A group without its command (`tdg keys`): the group's help says what it takes.
    if (error.code === 'commander.help') {
      throw new UsageError(at === program ? 'no command given' : `${pathOf(at)} needs a command`, [], at.helpInformation().trimEnd());
    }
    throw new UsageError(error.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' '), [], usageHint(at));
  }
  if (!parsed) throw new Error('The command line named no command and printed no help');
  return parsed;
}

import { CLI_CONTEXT } from '../admin/audit-log.service.js';
import type { AdminPrincipal, AuditContext } from '../admin/admin-actor.js';
import type { AdminRole } from '../admin/admin.entity.js';
import type { DeliveryStatus } from '../outbound-webhooks/outbound-delivery.entity.js';
import type { OperatorServices } from './operator-database.js';
import { verificationState } from '../archive/archive-verifier.js';
import { EXIT, ExitCode, UsageError } from './exit-codes.js';
import * as output from './output.js';

/** The CLI acts as an `admin` would (it may manage anyone's tokens); its audit entries name it, with the address `cli`. */
const CLI_PRINCIPAL: AdminPrincipal & AuditContext = { ...CLI_CONTEXT, role: 'admin' };

/** `limit` and `cursor` as the REST API takes them; `all`: follow nextCursor to the end. */
export interface Paging {
  limit: number;
  cursor?: string;
  all: boolean;
}

/** A command line, parsed and validated by the REST API's DTOs: everything needed to run it, nothing touched yet. */
export type CliCommand =
  | { name: 'keys issue'; input: { source: string; name?: string; expiresAt?: string } }
  | { name: 'keys list'; source?: string; paging: Paging }
  | { name: 'keys rotate'; id: string; gracePeriodSeconds: number }
  | { name: 'keys revoke'; id: string }
  | { name: 'admins create'; input: { email: string; role: AdminRole; name?: string } }
  | { name: 'admins list'; paging: Paging }
  | { name: 'admins update'; id: string; change: { role?: AdminRole; name?: string | null; disabled?: boolean } }
  | { name: 'admins tokens issue'; adminId: string; input: { name?: string; expiresAt?: string } }
  | { name: 'admins tokens list'; adminId: string }
  | { name: 'admins tokens revoke'; tokenId: string }
  | { name: 'endpoints list'; source?: string; paging: Paging }
  | { name: 'endpoints enable' | 'endpoints disable'; id: string }
  | { name: 'deliveries list'; filter: { source?: string; status?: DeliveryStatus; attention?: boolean; documentId?: string }; paging: Paging }
  | { name: 'deliveries retry'; id: string }
  | { name: 'archive verify'; key?: string; state?: string }
  | { name: 'archive export'; file: string; key?: string };

/**
 * The embedded clusters that root's gateways left under /var/lib/tax-document-gateway (README, "As root"):
 * files only, no database. `dir`: where to look; `unrecorded`: also remove those that do not record their DATA_DIR;
 * `cluster`: remove only this one, named by its id or by a DATA_DIR it belongs to.
 */
export type ClusterCommand =
  { name: 'clusters list'; dir: string } | { name: 'clusters prune'; dir: string; yes: boolean; unrecorded: boolean; cluster?: string };

export const isClusterCommand = (command: AnyCommand): command is ClusterCommand => command.name.startsWith('clusters ');

/** `archive verify --file`: an export, checked with no configuration and no database. */
export type ExportCommand = { name: 'archive verify file'; file: string; key?: string; state?: string };

export const isExportCommand = (command: AnyCommand): command is ExportCommand => command.name === 'archive verify file';

export type AnyCommand = CliCommand | ClusterCommand | ExportCommand;

/** What a command answers: `body` is the REST API's JSON (`--json`), `text` the same for a person. */
export interface Outcome {
  body: unknown;
  text: string;
  /** For a person, on stderr: how to get the next page. */
  hint?: string;
  /** Not OK although the command ran: the archive's verification found something. */
  exitCode?: ExitCode;
}

/** Only these may find no database yet: each can be the first command of a new install. */
export const mayCreateDatabase = (command: CliCommand) => command.name === 'keys issue' || command.name === 'admins create';

type Page<T> = { data: T[]; nextCursor: string | null };

async function paged<T>(paging: Paging, fetch: (cursor: string | undefined, limit: number) => Promise<Page<T>>): Promise<Page<T>> {
  let page = await fetch(paging.cursor, paging.limit);
  if (!paging.all) return page;
  const data = [...page.data];
  while (page.nextCursor) {
    page = await fetch(page.nextCursor, paging.limit);
    data.push(...page.data);
  }
  return { data, nextCursor: null };
}

function listed<T>(page: Page<T>, text: (data: T[]) => string): Outcome {
  return { body: page, text: text(page.data), ...(page.nextCursor ? { hint: `More: the same command with --cursor ${page.nextCursor}, or --all.` } : {}) };
}

/** Runs a parsed command through the services of the REST API, so the same rules hold and the same audit entries are written. */
export async function execute(command: CliCommand, services: OperatorServices): Promise<Outcome> {
  const { keys, admins, operations, endpoints, deliveries } = services;
  switch (command.name) {
    case 'keys issue': {
      const key = await keys.create(CLI_CONTEXT, command.input);
      return { body: key, text: output.issuedKey(key) };
    }
    case 'keys list': {
      const page = await paged(command.paging, (cursor, limit) => keys.page({ source: command.source, cursor }, limit));
      return listed(page, (data) => output.keysTable(data, command.source));
    }
    case 'keys rotate': {
      const successor = await keys.rotate(CLI_CONTEXT, command.id, command.gracePeriodSeconds);
      return { body: successor, text: output.rotatedKey(command.id, successor, command.gracePeriodSeconds) };
    }
    case 'keys revoke': {
      const startedAt = Date.now();
      const key = await keys.revoke(CLI_CONTEXT, command.id);
      return { body: key, text: output.revokedKey(key, Date.parse(key.revokedAt!) < startedAt) };
    }
    case 'admins create': {
      const created = await admins.create(CLI_CONTEXT, command.input);
      return { body: created, text: output.admin(`Created administrator ${output.printable(created.email)}.`, created) };
    }
    case 'admins list':
      return listed(await paged(command.paging, (cursor, limit) => admins.page(cursor, limit)), output.adminsTable);
    case 'admins update': {
      const updated = await admins.update(CLI_CONTEXT, command.id, command.change);
      return { body: updated, text: output.admin(`Updated administrator ${output.printable(updated.email)}.`, updated) };
    }
    case 'admins tokens issue': {
      const token = await admins.issueToken(CLI_PRINCIPAL, command.adminId, command.input);
      return { body: token, text: output.issuedToken(token) };
    }
    case 'admins tokens list': {
      const data = await admins.tokensOf(command.adminId);
      return { body: { data }, text: output.tokensTable(data) };
    }
    case 'admins tokens revoke': {
      const startedAt = Date.now();
      const token = await admins.revokeToken(CLI_PRINCIPAL, command.tokenId);
      return { body: token, text: output.revokedToken(token, Date.parse(token.revokedAt!) < startedAt) };
    }
    case 'endpoints list': {
      const page = await paged(command.paging, (cursor, limit) => endpoints.pageForAdmin({ source: command.source, cursor }, limit));
      return listed(page, (data) => output.endpointsTable(data, command.source));
    }
    case 'endpoints enable':
    case 'endpoints disable': {
      const endpoint = await operations.setEndpointEnabled(CLI_CONTEXT, command.id, command.name === 'endpoints enable');
      return { body: endpoint, text: output.endpointSwitched(endpoint) };
    }
    case 'deliveries list': {
      const page = await paged(command.paging, (cursor, limit) => deliveries.pageForAdmin({ ...command.filter, cursor }, limit));
      return listed(page, output.deliveriesTable);
    }
    case 'deliveries retry': {
      const delivery = await operations.retryDelivery(CLI_CONTEXT, command.id);
      return { body: delivery, text: output.deliveryRetried(delivery) };
    }
    case 'archive verify': {
      const kept = command.state ? await verificationState.read(command.state) : null;
      const report = await services.archive.verifyDatabase(verifierKeyOf(command.key, services.archiveKey), kept);
      if (command.state) await verificationState.keep(command.state, report);
      return { body: report, text: output.verification(report), ...(report.findings.length > 0 ? { exitCode: EXIT.FINDINGS } : {}) };
    }
    case 'archive export': {
      const key = verifierKeyOf(command.key, services.archiveKey);
      const exported = await services.archive.export(command.file, key, services.archiveOrigin);
      return { body: { file: command.file, ...exported, verifierKey: key }, text: output.exported(command.file, exported) };
    }
  }
}

/** The key checkpoints are checked against: --key, else the one ARCHIVE_SIGNING_KEY (or DATA_DIR's generated key) makes. */
function verifierKeyOf(given: string | undefined, configured: string | null): string {
  const key = given ?? configured;
  if (!key) throw new UsageError('No archive key is known here: pass --key <verifier key> (GET /api/v1/archive/public-key), or set ARCHIVE_SIGNING_KEY');
  return key;
}

import type { VerificationReport } from '../archive/archive-verifier.js';
import type { IssuedKeyView } from '../admin/admin-api-keys.service.js';
import type { AdminTokenView, AdminView } from '../admin/admins.service.js';
import type { ApiKeyView } from '../auth/api-keys.service.js';
import type { AdminDeliveryDto } from '../outbound-webhooks/dto/delivery.dto.js';
import type { AdminWebhookEndpointDto } from '../outbound-webhooks/dto/webhook-endpoint.dto.js';
import type { RootCluster } from '../database/root-clusters.js';

/** The human output of each command: tables for lists, a few lines for a change. `--json` bypasses all of it. */

/** To the second: milliseconds only widen a table. */
const when = (value: string | null, none = '-') => (value ? value.replace(/\.\d{3}Z$/, 'Z') : none);
/** Names, emails and URLs are data: no terminal control sequence from the database reaches the screen. */
export const printable = (value: string | null) => (value ?? '').replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
const text = (value: string | null) => printable(value) || '-';
const masked = (secret: { prefix: string; last4: string }) => `${secret.prefix}…${secret.last4}`;

export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, column) => Math.max(...all.map((row) => row[column].length)));
  return (
    all
      .map((row) =>
        row
          .map((cell, column) => cell.padEnd(widths[column]))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

function fields(pairs: [string, string][]): string[] {
  const width = Math.max(...pairs.map(([name]) => name.length));
  return pairs.map(([name, value]) => `  ${name.padEnd(width)}  ${value}`);
}

function shownOnce(heading: string, pairs: [string, string][], secret: string, what: 'key' | 'token'): string {
  return [
    heading,
    '',
    ...fields(pairs),
    '',
    `  ${secret}`,
    '',
    `This ${what} is shown now and never again: the gateway stores only its hash.`,
    'Store it in your secret manager before you close this terminal.',
    '',
  ].join('\n');
}

export function issuedKey(key: IssuedKeyView, heading = `Issued an API key for source ${key.source}.`): string {
  return shownOnce(
    heading,
    [
      ['id', key.id],
      ['name', text(key.name)],
      ['expires', when(key.expiresAt, 'never')],
    ],
    key.key,
    'key',
  );
}

export function rotatedKey(oldId: string, successor: IssuedKeyView, graceSeconds: number): string {
  const old = graceSeconds > 0 ? `The old key keeps working for ${graceSeconds} s more, then stops.` : 'The old key has stopped working.';
  return issuedKey(successor, `Rotated API key ${oldId} (source ${successor.source}). ${old} Its successor:`);
}

export function revokedKey(key: ApiKeyView, already: boolean): string {
  const label = `${key.id} (${key.source}, ${masked(key)})`;
  return already ? `API key ${label} was already revoked at ${when(key.revokedAt)}.\n` : `Revoked API key ${label}: requests with it get 401 from now on.\n`;
}

/** A rotated key is ACTIVE until the end of its grace period, its revocation time, which the status then names. */
const keyStatus = (key: ApiKeyView) => (key.status === 'ACTIVE' && key.revokedAt ? `ACTIVE until ${when(key.revokedAt)}` : key.status);

export function keysTable(keys: ApiKeyView[], source?: string): string {
  if (keys.length === 0) return source ? `No API keys for source ${source}.\n` : 'No API keys.\n';
  return table(
    ['ID', 'SOURCE', 'STATUS', 'KEY', 'NAME', 'CREATED', 'EXPIRES', 'LAST USED'],
    keys.map((k) => [k.id, k.source, keyStatus(k), masked(k), text(k.name), when(k.createdAt), when(k.expiresAt, 'never'), when(k.lastUsedAt, 'never')]),
  );
}

const adminStatus = (admin: AdminView) => (admin.disabledAt ? `disabled since ${when(admin.disabledAt)}` : 'enabled');

export function admin(heading: string, a: AdminView): string {
  return [
    heading,
    '',
    ...fields([
      ['id', a.id],
      ['email', printable(a.email)],
      ['name', text(a.name)],
      ['role', a.role],
      ['status', adminStatus(a)],
    ]),
    '',
  ].join('\n');
}

export function adminsTable(admins: AdminView[]): string {
  if (admins.length === 0) return 'No administrators.\n';
  return table(
    ['ID', 'EMAIL', 'ROLE', 'STATUS', 'NAME', 'CREATED', 'LAST SEEN'],
    admins.map((a) => [a.id, printable(a.email), a.role, a.disabledAt ? 'disabled' : 'enabled', text(a.name), when(a.createdAt), when(a.lastSeenAt, 'never')]),
  );
}

export function issuedToken(token: AdminTokenView & { token: string }): string {
  const pairs: [string, string][] = [
    ['id', token.id],
    ['name', text(token.name)],
    ['expires', when(token.expiresAt, 'never')],
  ];
  return shownOnce(`Issued a personal token for administrator ${token.adminId}. Send it as Authorization: Bearer <token>.`, pairs, token.token, 'token');
}

export function tokensTable(tokens: AdminTokenView[]): string {
  if (tokens.length === 0) return 'No tokens.\n';
  return table(
    ['ID', 'TOKEN', 'NAME', 'CREATED', 'EXPIRES', 'REVOKED', 'LAST USED'],
    tokens.map((t) => [t.id, masked(t), text(t.name), when(t.createdAt), when(t.expiresAt, 'never'), when(t.revokedAt), when(t.lastUsedAt, 'never')]),
  );
}

export function revokedToken(token: AdminTokenView, already: boolean): string {
  const label = `${token.id} (${masked(token)}) of administrator ${token.adminId}`;
  return already ? `Token ${label} was already revoked at ${when(token.revokedAt)}.\n` : `Revoked token ${label}: requests with it get 401 from now on.\n`;
}

const endpointStatus = (e: AdminWebhookEndpointDto) => (e.enabled ? 'enabled' : `disabled (${e.disabledReason ?? 'unknown'})`);

export function endpointsTable(endpoints: AdminWebhookEndpointDto[], source?: string): string {
  if (endpoints.length === 0) return source ? `No push endpoints for source ${source}.\n` : 'No push endpoints.\n';
  return table(
    ['ID', 'SOURCE', 'STATUS', 'URL', 'EVENTS', 'CREATED'],
    endpoints.map((e) => [e.id, e.source, endpointStatus(e), printable(e.url), e.eventTypes.join(','), when(e.createdAt)]),
  );
}

export function endpointSwitched(endpoint: AdminWebhookEndpointDto): string {
  const label = `${endpoint.id} (${endpoint.source}, ${printable(endpoint.url)})`;
  return endpoint.enabled
    ? `Push endpoint ${label} is enabled: its waiting deliveries resume.\n`
    : `Push endpoint ${label} is disabled by an administrator: nothing is delivered to it, and its client cannot enable it again.\n`;
}

export function deliveriesTable(deliveries: AdminDeliveryDto[]): string {
  if (deliveries.length === 0) return 'No push deliveries.\n';
  return table(
    ['ID', 'SOURCE', 'STATUS', 'EVENT', 'ATTEMPTS', 'LAST ATTEMPT', 'RESULT', 'NEXT ATTEMPT', 'DOCUMENT', 'ENDPOINT'],
    deliveries.map((d) => [
      d.id,
      d.source,
      d.status,
      d.eventType,
      String(d.attempts),
      when(d.lastAttemptAt),
      d.lastResponseStatus !== null ? String(d.lastResponseStatus) : (d.lastError ?? '-'),
      when(d.nextAttemptAt),
      d.documentId ?? '-',
      printable(d.endpointUrl),
    ]),
  );
}

export function deliveryRetried(delivery: AdminDeliveryDto): string {
  return `Delivery ${delivery.id} (${delivery.source}, ${delivery.eventType}) to ${printable(delivery.endpointUrl)} is due again now; the gateway attempts it at once.\n`;
}

/** As du -h would say it, in binary units. */
export function size(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** The DATA_DIRs a cluster names: those linking to it when some do, else those it records, each marked gone. */
function clusterDataDirs(cluster: RootCluster): string {
  if (cluster.linkedFrom.length > 0) return cluster.linkedFrom.map(printable).join(', ');
  if (!cluster.dataDirs?.length) return '-';
  return cluster.dataDirs.map((dir) => `${printable(dir)} (no link)`).join(', ');
}

export function clustersTable(clusters: RootCluster[], dir: string): string {
  if (clusters.length === 0) return `No clusters in ${printable(dir)}.\n`;
  return table(
    ['ID', 'STATE', 'SIZE', 'POSTMASTER', 'DATA_DIR'],
    clusters.map((c) => [c.id, c.state, size(c.bytes), c.postmasterPid === null ? '-' : `pid ${c.postmasterPid}`, clusterDataDirs(c)]),
  );
}

/** For a person, after the list: what each state that needs a decision means, and what to run. */
export function clustersHints(clusters: RootCluster[]): string[] {
  const of = (state: RootCluster['state']) => clusters.filter((c) => c.state === state);
  const hints: string[] = [];
  const orphaned = of('orphaned');
  if (orphaned.length > 0) {
    const total = size(orphaned.reduce((sum, c) => sum + c.bytes, 0));
    hints.push(
      `orphaned: no DATA_DIR links to it any more; 'tdg clusters prune' removes ${orphaned.length === 1 ? 'it' : `these ${orphaned.length}`} (${total}).`,
    );
  }
  if (of('running').length > 0) hints.push('running: no DATA_DIR links to it, but its postmaster runs; prune leaves it until that process has stopped.');
  if (of('unrecorded').length > 0) {
    hints.push(
      "unrecorded: made before clusters recorded their DATA_DIR. Start the gateway once on each DATA_DIR you keep, so that it records it; then 'tdg clusters prune --unrecorded' removes the rest.",
    );
  }
  return hints;
}

export function clustersRemoved(removed: RootCluster[], kept: RootCluster[]): string {
  const lines = removed.map((c) => `Removed ${c.path} (${size(c.bytes)}).`);
  for (const c of kept) lines.push(`Kept ${c.path}: it is ${c.state} now.`);
  if (removed.length > 1) lines.push(`Freed ${size(removed.reduce((sum, c) => sum + c.bytes, 0))}.`);
  return `${lines.join('\n')}\n`;
}

/** An archive verification: what was checked, then each finding on a line of its own, named by document and entry. */
export function verification(report: VerificationReport & { verifierKey?: string }): string {
  const head = `Verified ${report.treeSize} archive entries and ${report.checkpoints} checkpoints${report.verifierKey ? ` against ${report.verifierKey}` : ''}.`;
  if (report.findings.length === 0) return `${head}\nNo alteration found.\n`;
  const lines = report.findings.map(
    (f) => `  ${f.kind}${f.documentId ? ` document ${f.documentId}` : ''}${f.index !== null ? ` entry ${f.index}` : ''}: ${printable(f.detail)}`,
  );
  return `${head}\n${report.findings.length} finding${report.findings.length === 1 ? '' : 's'}:\n${lines.join('\n')}\n`;
}

export function exported(file: string, exported: { treeSize: number; checkpoints: number }): string {
  return `Exported ${exported.treeSize} archive entries and ${exported.checkpoints} checkpoints to ${printable(file)}.\nCheck it anywhere with: tdg archive verify --file ${printable(file)} --key <verifier key>\n`;
}

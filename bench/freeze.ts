/**
 * A frozen PostgreSQL under a gateway at its defaults (pool 10, DB_STATEMENT_TIMEOUT_MS 10000): 32 clients
 * send creates and signed bank events, PostgreSQL is stopped (SIGSTOP of the postmaster and its children)
 * for FREEZE_MS (20 s), then resumed. Prints, per round, the connections abandoned in PostgreSQL's listen
 * backlog at the thaw, how long after the thaw the first create and bank event were served, how long the
 * requests that ended during the freeze had waited for their answer (from the freeze or their start, if
 * later), and any answer other than 200/201/503. See "When PostgreSQL stops answering" in docs/operations.md.
 *
 *   npm run build && npm run bench:freeze        (ROUNDS=3 FREEZE_MS=20000)
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from '../src/database/embedded-postgres.js';
import { removeDataDir } from '../src/database/embedded-postgres-layout.js';
import { BANK_WEBHOOK_PATH, signWebhook } from '../src/webhooks/webhook-signature.js';
import { startClusterProcess, startGateway, waitFor } from '../test/support/processes.js';

const FREEZE_MS = Number(process.env.FREEZE_MS ?? 20000);
const CLIENTS = 32;
const ROUNDS = Number(process.env.ROUNDS ?? 3);

async function round(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'gateway-freeze-'));
  const pgPort = await freePort();
  const cluster = await startClusterProcess(dataDir, pgPort);
  const port = await freePort();
  const secret = 'trial-secret-' + randomBytes(8).toString('hex');
  const admin = 'trial-admin-' + randomBytes(16).toString('hex');
  const gw = startGateway({
    DATABASE_URL: cluster.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_TOKEN: admin,
    BANK_WEBHOOK_SECRET: secret,
    RATE_LIMIT_PER_MINUTE: '1000000',
    LOG_LEVEL: 'warn',
  });
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${base}/health/ready`)).status === 200, 'gateway', 30000).catch((e) => {
    console.error(gw.output());
    throw e;
  });
  const source = 'trial-' + randomBytes(3).toString('hex');
  const k = await (
    await fetch(`${base}/admin/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ source }),
    })
  ).json();
  const key = k.key as string;
  const pm = () => Number(readFileSync(join(dataDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
  const pids = () => [pm(), ...readFileSync(`/proc/${pm()}/task/${pm()}/children`, 'utf8').trim().split(/\s+/).map(Number)];
  const backlog = () =>
    execFileSync('ss', ['-Hltn', `sport = :${pgPort}`], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.trim())
      .reduce((s, l) => s + Number(l.trim().split(/\s+/)[1]), 0);
  type O = { kind: string; status: number; start: number; end: number };
  const out: O[] = [];
  let running = true;
  let seq = 0;
  const loops = Array.from({ length: CLIENTS }, async (_, i) => {
    for (let n = 0; running; n++) {
      const start = performance.now();
      let status: number;
      let kind = 'create';
      try {
        if (n % 2 === 0) {
          const body = {
            source,
            externalId: `INV-${Date.now()}-${seq++}`,
            type: 'INVOICE',
            taxpayer: { taxId: 'DE123456789', name: 'M', country: 'DE' },
            issueDate: '2026-11-20',
            currency: 'EUR',
            totalAmount: '119.00',
            taxAmount: '19.00',
            providerReference: `PAY-${i}-${n}-${seq}`,
          };
          const r = await fetch(`${base}/api/v1/documents`, {
            method: 'POST',
            headers: { 'x-api-key': key, 'content-type': 'application/json', 'x-idempotency-key': 'idem-' + randomBytes(8).toString('hex') },
            body: JSON.stringify(body),
          });
          status = r.status;
          await r.arrayBuffer();
        } else {
          kind = 'webhook';
          const ts = new Date().toISOString();
          const raw = JSON.stringify({
            eventId: `evt-${i}-${n}-${seq++}`,
            eventType: 'PAYMENT_STATUS',
            status: 'PAID',
            providerReference: `PAY-${i}-${n - 1}-x`,
          });
          const r = await fetch(`${base}${BANK_WEBHOOK_PATH}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-provider-timestamp': ts, 'x-provider-signature': signWebhook(secret, ts, raw) },
            body: raw,
          });
          status = r.status;
          await r.arrayBuffer();
        }
      } catch {
        status = -1;
      }
      out.push({ kind, status, start, end: performance.now() });
      if (status === 503) await new Promise((r) => setTimeout(r, 50));
    }
  });
  await new Promise((r) => setTimeout(r, 3000));
  const ps = pids();
  ps.forEach((p) => process.kill(p, 'SIGSTOP'));
  const frozenAt = performance.now();
  await new Promise((r) => setTimeout(r, FREEZE_MS));
  const bl = backlog();
  ps.forEach((p) => process.kill(p, 'SIGCONT'));
  const thaw = performance.now();
  await new Promise((r) => setTimeout(r, 8000));
  running = false;
  await Promise.all(loops);
  const firstOk = (kind: string) => {
    const o = out.filter((x) => x.kind === kind && (x.status === 200 || x.status === 201) && x.end > thaw).sort((a, b) => a.end - b.end)[0];
    return o ? ((o.end - thaw) / 1000).toFixed(2) : 'none';
  };
  const last503 = out.filter((x) => x.status === 503 && x.end > thaw).sort((a, b) => b.end - a.end)[0];
  const others = out.filter((x) => ![200, 201, 503].includes(x.status)).map((x) => x.status);
  const waits = out
    .filter((x) => x.end > frozenAt && x.end < thaw)
    .map((x) => (x.end - Math.max(x.start, frozenAt)) / 1000)
    .sort((a, b) => a - b);
  // Still waiting at the thaw: how long they had waited by then.
  const atThaw = out.filter((x) => x.start < thaw && x.end > thaw).map((x) => (thaw - Math.max(x.start, frozenAt)) / 1000);
  const before = out.filter((x) => x.end < frozenAt && x.status < 300).length / 3;
  console.log(
    JSON.stringify({
      freezeMs: FREEZE_MS,
      backlog: bl,
      firstCreate: firstOk('create'),
      firstWebhook: firstOk('webhook'),
      last503AfterThaw: last503 ? ((last503.end - thaw) / 1000).toFixed(2) : null,
      waitedDuringFreeze: { requests: waits.length, p50: waits[Math.floor(waits.length / 2)]?.toFixed(2), max: waits.at(-1)?.toFixed(2) },
      waitingAtThaw: { requests: atThaw.length, max: atThaw.length ? Math.max(...atThaw).toFixed(2) : null },
      others: others.slice(0, 10),
      othersCount: others.length,
      okPerSecBefore: Math.round(before),
      load: readFileSync('/proc/loadavg', 'utf8').trim(),
    }),
  );
  gw.child.kill('SIGTERM');
  await gw.exited;
  await cluster.stop();
  await removeDataDir(dataDir);
}
async function main(): Promise<void> {
  for (let i = 0; i < ROUNDS; i += 1) await round();
}
main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);

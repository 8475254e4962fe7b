import { jest } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { appendFile, chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer, Server, Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { databaseFailureDetail } from '../../src/common/database-failure.js';
import { KEEPALIVE_INITIAL_DELAY_MS } from '../../src/database/connection-options.js';
import { freePort } from '../../src/database/embedded-postgres.js';
import { BANK_WEBHOOK_PATH, signWebhook } from '../../src/webhooks/webhook-signature.js';
import { documentBody, newIdempotencyKey } from '../support/factories.js';
import { Spawned, waitFor } from '../support/processes.js';
import { startReadyGateway, TEST_ADMIN_TOKEN, TEST_WEBHOOK_SECRET } from '../support/test-app.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

/** The PostgreSQL server binaries a second cluster needs (initdb, pg_ctl, pg_basebackup), newest first. */
const BIN_DIR = ['17', '16', '15'].map((version) => `/usr/lib/postgresql/${version}/bin`).find((dir) => existsSync(join(dir, 'pg_basebackup')));

/** PostgreSQL refuses to run as root: then its clusters run as the postgres user. */
const AS_ROOT = process.getuid?.() === 0;
const owner = AS_ROOT
  ? { uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) }
  : {};

function run(binary: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(BIN_DIR!, binary), args, { ...owner, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(output) : reject(new Error(`${binary} ${args.join(' ')} failed (${code}): ${output}`))));
  });
}

/** One PostgreSQL server of the pair, in `dir`, on loopback `port`. */
class PgServer {
  constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/gateway`;
  }

  async start(options = ''): Promise<void> {
    await run('pg_ctl', ['-D', this.dir, '-l', `${this.dir}.log`, '-w', '-t', '60', '-o', `-p ${this.port} ${options}`, 'start']);
  }

  /** The running postmaster's pid; null once it is gone (a killed one leaves its pid file behind). */
  postmasterPid(): number | null {
    try {
      const pid = Number(readFileSync(join(this.dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(this.dir) ? pid : null;
    } catch {
      return null;
    }
  }

  /** The postmaster and every process under it, killed at once: the machine died. */
  kill(): void {
    const pid = this.postmasterPid();
    if (!pid) return;
    let children: number[] = [];
    try {
      children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      // Already gone.
    }
    for (const target of [pid, ...children]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }

  async stop(): Promise<void> {
    if (!this.postmasterPid()) return;
    await run('pg_ctl', ['-D', this.dir, '-m', 'immediate', '-w', 'stop']).catch(() => this.kill());
  }

  async query<T>(sql: string, values: unknown[] = [], database = 'gateway'): Promise<T[]> {
    const client = new Client({ host: '127.0.0.1', port: this.port, user: 'postgres', database });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return (await client.query(sql, values)).rows as T[];
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

/**
 * The Service (or virtual address) that leads to the primary: a TCP relay that can be switched to another
 * server. A switch closes every connection relayed so far, as a moved address resets them.
 */
class SwitchingProxy {
  private server!: Server;
  private readonly open = new Set<Socket>();
  /** Connections relayed, by the server port they reached. */
  private readonly relayed = new Map<number, number>();
  /**
   * The gateway's end of each relayed connection (its local port), by the relay's end towards the server
   * (the `client_port` PostgreSQL sees): which of the gateway's sockets carries which session.
   */
  readonly gatewayPortOf = new Map<number, number>();
  port = 0;

  constructor(private target: number) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const target = this.target;
      const gatewayPort = client.remotePort!;
      const upstream = connect(target, '127.0.0.1');
      this.open.add(client).add(upstream);
      let upstreamPort: number | undefined;
      upstream.once('connect', () => {
        upstreamPort = upstream.localPort!;
        this.relayed.set(target, this.connectionsTo(target) + 1);
        this.gatewayPortOf.set(upstreamPort, gatewayPort);
      });
      const close = () => {
        if (upstreamPort !== undefined) this.gatewayPortOf.delete(upstreamPort);
        client.destroy();
        upstream.destroy();
        this.open.delete(client);
        this.open.delete(upstream);
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    this.port = await freePort();
    await new Promise<void>((resolve) => this.server.listen(this.port, '127.0.0.1', resolve));
  }

  switchTo(target: number): void {
    this.target = target;
    for (const socket of this.open) socket.destroy();
    this.open.clear();
  }

  /** How many connections reached the server on `port` through this relay so far. */
  connectionsTo(port: number): number {
    return this.relayed.get(port) ?? 0;
  }

  async close(): Promise<void> {
    for (const socket of this.open) socket.destroy();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

/** The kernel's TCP timer kinds in /proc/net/tcp (`tr`): 2 is keepalive, armed on an idle socket with SO_KEEPALIVE. */
const TCP_TIMERS: Record<number, string> = { 0: 'none', 1: 'retransmit', 2: 'keepalive', 3: 'time-wait', 4: 'zero-window probe' };

/**
 * This machine's IPv4 TCP sockets as the kernel lists them: ports, and the timer running on each with
 * what is left of it (`tm->when`, in clock ticks of 1/100 s, USER_HZ).
 */
function tcpSockets(): Array<{ localPort: number; remotePort: number; timer: string; leftMs: number }> {
  return readFileSync('/proc/net/tcp', 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => {
      const [, local, remote, , , timer] = line.trim().split(/\s+/);
      const [kind, when] = timer.split(':');
      return {
        localPort: parseInt(local.split(':')[1], 16),
        remotePort: parseInt(remote.split(':')[1], 16),
        timer: TCP_TIMERS[parseInt(kind, 16)] ?? kind,
        leftMs: parseInt(when, 16) * 10,
      };
    });
}

/** A `/metrics` sample of `base`: the sum of `name`'s series whose `label` is `value`. */
async function metric(base: string, name: string, label: string, value: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) && line.includes(`${label}="${value}"`))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
}

type Outcome = {
  kind: 'create' | 'webhook' | 'read';
  statuses: number[];
  startedAt: number;
  endedAt: number;
  id?: string;
  key?: string;
  body?: Record<string, unknown>;
  eventId?: string;
};

interface FeedEvent {
  id: string;
  documentId: string;
  type: string;
}

/** Without the binaries the tests are skipped, and their name says why. */
const describeWithBinaries = BIN_DIR ? describe : describe.skip;
const SKIPPED = BIN_DIR ? '' : ' (skipped: no PostgreSQL server binaries with pg_basebackup under /usr/lib/postgresql/<version>/bin)';

/**
 * A failover under load on real streaming replication: a primary and a standby, a proxy standing in for
 * the Service that follows the primary, two gateways behind it. The primary dies, the standby is promoted,
 * the proxy switches to it (docs/operations.md, "Failover").
 */
describeWithBinaries(`a PostgreSQL failover under load${SKIPPED}`, () => {
  jest.setTimeout(180_000);
  let root: string;
  const started: { servers: PgServer[]; proxies: SwitchingProxy[]; gateways: Spawned[]; receivers: WebhookReceiver[]; loops: Array<() => Promise<unknown>> } = {
    servers: [],
    proxies: [],
    gateways: [],
    receivers: [],
    loops: [],
  };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'gateway-failover-'));
    if (AS_ROOT) await chown(root, owner.uid!, owner.gid!);
  });
  afterAll(async () => {
    // Each step whatever the one before did: no server, gateway or directory may outlive the file.
    const quietly = (work: () => unknown) =>
      Promise.resolve()
        .then(work)
        .catch(() => undefined);
    // Clients still running when a test failed part way.
    await quietly(() => Promise.all(started.loops.map((stop) => stop())));
    for (const gateway of started.gateways) {
      if (gateway.child.exitCode === null) gateway.child.kill('SIGKILL');
    }
    await quietly(() => Promise.all(started.gateways.map((gateway) => gateway.exited)));
    await quietly(() => Promise.all(started.proxies.map((proxy) => proxy.close())));
    await quietly(() => Promise.all(started.receivers.map((receiver) => receiver.stop())));
    for (const server of started.servers) await quietly(() => server.stop());
    await rm(root, { recursive: true, force: true });
  });

  /** A primary (synchronous: waiting for the standby's flush at each commit) and its streaming standby. */
  async function pair(name: string, synchronous: boolean): Promise<{ primary: PgServer; standby: PgServer }> {
    const primary = new PgServer(join(root, `${name}-primary`), await freePort());
    const standby = new PgServer(join(root, `${name}-standby`), await freePort());
    started.servers.push(primary, standby);
    await run('initdb', ['-D', primary.dir, '--auth=trust', '--username=postgres', '--no-sync']);
    await appendFile(
      join(primary.dir, 'postgresql.conf'),
      [
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${root}'`,
        'wal_level = replica',
        'max_wal_senders = 4',
        'fsync = off',
        'synchronous_commit = on',
        '',
      ].join('\n'),
    );
    await primary.start();
    await primary.query('CREATE DATABASE gateway', [], 'postgres');
    await run('pg_basebackup', [
      '-h',
      '127.0.0.1',
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-D',
      standby.dir,
      '-R',
      '-X',
      'stream',
      '--checkpoint=fast',
      '--no-sync',
    ]);
    await standby.start();
    // Only now: until a standby streams, each commit on the primary would wait for one.
    if (synchronous) {
      await primary.query("ALTER SYSTEM SET synchronous_standby_names = '*'", [], 'postgres');
      await primary.query('SELECT pg_reload_conf()', [], 'postgres');
    }
    await waitFor(
      async () =>
        (
          await primary.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = $1`, [
            synchronous ? 'sync' : 'async',
          ])
        )[0].n === 1,
      'the standby streaming',
    );
    return { primary, standby };
  }

  async function gateway(databaseUrl: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
    const { spawned, url } = await startReadyGateway(databaseUrl, {
      LOG_LEVEL: 'warn',
      DB_POOL_SIZE: '6',
      DB_STATEMENT_TIMEOUT_MS: '2000',
      RATE_LIMIT_PER_MINUTE: '1000000',
      // Push deliveries to a receiver on loopback, leased briefly: one leased on the old primary is leased
      // again on the new one soon after.
      OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true',
      OUTBOUND_WEBHOOKS_RETRY_SCHEDULE: '1s,1s,1s,1s,1s',
      OUTBOUND_WEBHOOKS_POLL_SECONDS: '1',
      OUTBOUND_WEBHOOKS_TIMEOUT_SECONDS: '2',
      OUTBOUND_WEBHOOKS_LEASE_SECONDS: '4',
      ...env,
    });
    started.gateways.push(spawned);
    return url;
  }

  /**
   * Clients sending without pause until `stop()`: creates and bank events each retried, after a 503 or a
   * lost answer, under the same idempotency key or eventId until acknowledged, and reads.
   */
  function load(bases: string[], apiKey: string, source: string, clients: number) {
    const outcomes: Outcome[] = [];
    let running = true;
    const send = async (url: string, init: RequestInit): Promise<{ status: number; body: Record<string, unknown> }> => {
      try {
        const res = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
        return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
      } catch {
        return { status: 0, body: {} };
      }
    };
    const untilAnswered = async (outcome: Outcome, attempt: (base: string) => Promise<{ status: number; body: Record<string, unknown> }>) => {
      for (let n = 0; ; n += 1) {
        const { status, body } = await attempt(bases[n % bases.length]);
        outcome.statuses.push(status);
        // 409: an earlier attempt under the key is still running (its answer was lost): come back, as a client does.
        if (status !== 503 && status !== 409 && status !== 0) return body;
        if (!running && n > 200) return body;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    const one = async (i: number, n: number): Promise<Outcome> => {
      const startedAt = performance.now();
      const base = bases[(i + n) % bases.length];
      if (n % 3 === 0) {
        const key = newIdempotencyKey();
        const body = documentBody(source);
        const outcome: Outcome = { kind: 'create', statuses: [], startedAt, endedAt: 0, key, body };
        const answer = await untilAnswered(outcome, (b) =>
          send(`${b}/api/v1/documents`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'x-idempotency-key': key },
            body: JSON.stringify(body),
          }),
        );
        return { ...outcome, id: answer.id as string | undefined, endedAt: performance.now() };
      }
      if (n % 3 === 1) {
        const eventId = `evt-FO-${i}-${n}-${randomBytes(6).toString('hex')}`;
        const raw = JSON.stringify({ eventId, eventType: 'PAYMENT_STATUS', status: 'PAID', providerReference: `PAY-FO-${eventId}` });
        const outcome: Outcome = { kind: 'webhook', statuses: [], startedAt, endedAt: 0, eventId };
        await untilAnswered(outcome, (b) => {
          const timestamp = new Date().toISOString();
          const headers = {
            'content-type': 'application/json',
            'x-provider-timestamp': timestamp,
            'x-provider-signature': signWebhook(TEST_WEBHOOK_SECRET, timestamp, raw),
          };
          return send(`${b}${BANK_WEBHOOK_PATH}`, { method: 'POST', headers, body: raw });
        });
        return { ...outcome, endedAt: performance.now() };
      }
      const { status } = await send(`${base}/api/v1/documents?limit=1`, { headers: { 'x-api-key': apiKey } });
      return { kind: 'read', statuses: [status], startedAt, endedAt: performance.now() };
    };
    const loops = Array.from({ length: clients }, async (_, i) => {
      for (let n = 0; running; n += 1) outcomes.push(await one(i, n));
    });
    return {
      outcomes,
      stop: async () => {
        running = false;
        await Promise.all(loops);
        return outcomes;
      },
    };
  }

  /** Every answer of each attempt, by time, for the figures: when each ended and with what status. */
  function answersAfter(outcomes: Outcome[], at: number) {
    return outcomes.filter((o) => o.startedAt >= at && o.statuses.at(-1) !== undefined);
  }

  /** Readiness of each gateway, polled until `stop()`. */
  function watchReadiness(bases: string[]) {
    const seen: Array<{ base: string; at: number; status: number }> = [];
    let running = true;
    const loops = bases.map(async (base) => {
      while (running) {
        const status = await fetch(`${base}/health/ready`, { signal: AbortSignal.timeout(10_000) }).then(
          (res) => res.status,
          () => 0,
        );
        seen.push({ base, at: performance.now(), status });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    });
    return {
      seen,
      stop: async () => {
        running = false;
        await Promise.all(loops);
      },
    };
  }

  /** A client following the feed: every event it was given, in order, until `stop()`. */
  function followFeed(bases: string[], apiKey: string) {
    const events: FeedEvent[] = [];
    let cursor = '';
    let running = true;
    let pages = 0;
    const drain = async (base: string): Promise<boolean> => {
      const res = await fetch(`${base}/api/v1/events?limit=100${cursor ? `&after=${cursor}` : ''}`, {
        headers: { 'x-api-key': apiKey },
        signal: AbortSignal.timeout(10_000),
      });
      if (res.status !== 200) return false;
      const page = (await res.json()) as { data: FeedEvent[]; nextCursor: string | null; hasMore: boolean };
      events.push(...page.data);
      if (page.nextCursor) cursor = page.nextCursor;
      pages += 1;
      return page.hasMore;
    };
    const loop = (async () => {
      for (let n = 0; running; n += 1) {
        const more = await drain(bases[n % bases.length]).catch(() => false);
        if (!more) await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    return {
      events,
      pages: () => pages,
      /** Stops, then (given `base`) reads on until the feed has caught up with `expected` events. */
      stop: async (base?: string, expected = 0) => {
        running = false;
        await loop;
        if (!base) return;
        await waitFor(async () => (await drain(base).catch(() => true), events.length >= expected), 'the feed to catch up', 60_000);
        while (await drain(base).catch(() => false));
      },
    };
  }

  async function issueKey(base: string): Promise<{ key: string; source: string }> {
    const source = `src-fo-${randomBytes(4).toString('hex')}`;
    const res = await fetch(`${base}/admin/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ source }),
    });
    expect(res.status).toBe(201);
    return { key: ((await res.json()) as { key: string }).key, source };
  }

  /** An admin audit entry written two years ago, straight into `server`: past RETENTION_AUDIT, for the retention job. */
  async function expiredAuditEntry(server: PgServer): Promise<string> {
    const [{ id }] = await server.query<{ id: string }>(
      `INSERT INTO admin_audit_log (action, remote_address, created_at) VALUES ('api_key.created', '127.0.0.1', now() - interval '2 years') RETURNING id::text`,
    );
    return id;
  }

  async function auditEntryGone(server: PgServer, id: string): Promise<boolean> {
    return (await server.query<{ n: number }>('SELECT count(*)::int AS n FROM admin_audit_log WHERE id = $1', [id]))[0].n === 0;
  }

  /**
   * The connections an instance holds to `server` through `proxy`, by the name each gives PostgreSQL, with
   * the timer the kernel runs on the instance's end of each.
   */
  async function gatewaySockets(server: PgServer, proxy: SwitchingProxy) {
    const sessions = await server.query<{ port: number; name: string }>(
      `SELECT client_port AS port, application_name AS name FROM pg_stat_activity WHERE datname = 'gateway' AND application_name LIKE 'tax-document-gateway%'`,
    );
    const sockets = tcpSockets();
    return sessions.flatMap(({ port, name }) => {
      const socket = sockets.find((s) => s.localPort === proxy.gatewayPortOf.get(port) && s.remotePort === proxy.port);
      return socket ? [{ name, ...socket }] : [];
    });
  }

  /** What a failover's hooks are given: the servers, and each instance with the proxy that leads it to the database. */
  interface Stage {
    primary: PgServer;
    standby: PgServer;
    bases: string[];
    proxies: SwitchingProxy[];
    key: string;
    source: string;
  }

  /**
   * Runs load, kills the primary, promotes the standby and switches the proxies; returns what it measured.
   * Each instance reaches the database through a proxy of its own, so that one can be led elsewhere than
   * the other; both are switched together. Only the first instance runs the retention job during the
   * test (every second); the second's first run would come after an hour.
   */
  async function failover(
    name: string,
    synchronous: boolean,
    hooks: { beforeKill?: (stage: Stage) => Promise<void>; beforePromote?: (stage: Stage) => Promise<void> } = {},
  ) {
    const servers = await pair(name, synchronous);
    const proxies = [new SwitchingProxy(servers.primary.port), new SwitchingProxy(servers.primary.port)];
    started.proxies.push(...proxies);
    await Promise.all(proxies.map((proxy) => proxy.start()));
    const url = (proxy: SwitchingProxy) => `postgres://postgres@127.0.0.1:${proxy.port}/gateway`;
    const bases = [await gateway(url(proxies[0]), { RETENTION_INTERVAL_SECONDS: '1' }), await gateway(url(proxies[1]), { RETENTION_INTERVAL_SECONDS: '3600' })];
    const { key, source } = await issueKey(bases[0]);
    const stage: Stage = { ...servers, bases, proxies, key, source };
    // A receiver slow enough that deliveries are under way when the primary dies.
    const receiver = await new WebhookReceiver(() => ({ status: 204, delayMs: 200 })).start();
    started.receivers.push(receiver);
    const endpoint = await fetch(`${bases[0]}/api/v1/webhook-endpoints`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'x-idempotency-key': newIdempotencyKey() },
      body: JSON.stringify({ url: receiver.url, eventTypes: ['document.created'] }),
    });
    expect(endpoint.status).toBe(201);
    const readiness = watchReadiness(bases);
    const feed = followFeed(bases, key);
    const running = load(bases, key, source, 8);
    started.loops.push(readiness.stop, running.stop, () => feed.stop());
    await waitFor(async () => running.outcomes.filter((o) => o.kind === 'create' && o.id).length >= 20, 'creates before the failover', 60_000);
    await hooks.beforeKill?.(stage);
    const killedAt = performance.now();
    servers.primary.kill();
    await waitFor(async () => servers.primary.postmasterPid() === null, 'the primary gone');
    // Promotion follows the detection of the failure, as an operator or Patroni does: by then each
    // instance's readiness says 503.
    await waitFor(
      async () => bases.every((base) => readiness.seen.some((r) => r.base === base && r.status === 503 && r.at >= killedAt)),
      'readiness 503 on both instances',
      30_000,
    );
    await hooks.beforePromote?.(stage);
    await run('pg_ctl', ['-D', servers.standby.dir, '-w', '-t', '60', 'promote']);
    for (const proxy of proxies) proxy.switchTo(servers.standby.port);
    const switchedAt = performance.now();
    // Load goes on until both gateways have answered creates again for a while.
    await waitFor(
      async () => answersAfter(running.outcomes, switchedAt).filter((o) => o.kind === 'create' && o.id).length >= 20,
      'creates after the switch',
      90_000,
    );
    const outcomes = await running.stop();
    await waitFor(
      async () => bases.every((base) => readiness.seen.some((r) => r.base === base && r.status === 200 && r.at > switchedAt)),
      'readiness 200 on both instances after the switch',
    );
    await readiness.stop();
    return { ...stage, outcomes, readiness: readiness.seen, feed, receiver, killedAt, switchedAt };
  }

  it('with synchronous replication: nothing acknowledged lost or doubled, no 500, back within seconds, and a feed follower sees every event once, in order', async () => {
    const READ_ONLY = databaseFailureDetail('read_only', 'api_write');
    /** Enough refusals to outnumber the connections an instance opens in that time when it keeps its connections. */
    const REFUSALS = 20;
    const readOnly = {
      create: { key: '', body: {} as Record<string, unknown> },
      attempts: [] as Array<{ status: number; code?: string; detail?: string; retryAfter: string | null }>,
      refusals: 0,
      connections: 0,
    };
    let retentionBeforeMs = 0;
    const run_ = await failover('sync', true, {
      // The first instance's retention job purges on the primary before the failover.
      beforeKill: async ({ primary }) => {
        const startedAt = performance.now();
        const id = await expiredAuditEntry(primary);
        await waitFor(() => auditEntryGone(primary, id), 'the retention job purging on the old primary', 60_000);
        retentionBeforeMs = performance.now() - startedAt;
      },
      // The second instance's address leads to the standby before its promotion, as an address moved early
      // or a Service that picked a replica would: a hot standby refuses every write (SQLSTATE 25006).
      beforePromote: async ({ standby, bases, proxies, key, source }) => {
        proxies[1].switchTo(standby.port);
        readOnly.create = { key: newIdempotencyKey(), body: documentBody(source) };
        const attempt = async () => {
          const res = await fetch(`${bases[1]}/api/v1/documents`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-api-key': key, 'x-idempotency-key': readOnly.create.key },
            body: JSON.stringify(readOnly.create.body),
          });
          const problem = (await res.json().catch(() => ({}))) as { code?: string; detail?: string };
          readOnly.attempts.push({ status: res.status, code: problem.code, detail: problem.detail, retryAfter: res.headers.get('retry-after') });
          return { status: res.status, refused: problem.detail === READ_ONLY };
        };
        // Until the instance reaches the standby its gate answers "unreachable"; then each create is refused.
        // Any answer but a 503 ends the wait: the assertions below say what it was.
        await waitFor(
          async () => {
            for (;;) {
              const { status, refused } = await attempt();
              if (status !== 503 || readOnly.attempts.filter((a) => a.detail === READ_ONLY).length >= REFUSALS) return true;
              if (!refused) return false;
            }
          },
          'creates refused by the standby',
          60_000,
        );
        // The refusals first, then the connections: each refusal counted had its connection opened before.
        readOnly.refusals = await metric(bases[1], 'database_unavailable_total', 'cause', 'read_only');
        readOnly.connections = proxies[1].connectionsTo(standby.port);
      },
    });
    const { outcomes, standby, switchedAt, killedAt } = run_;
    const statuses = outcomes.flatMap((o) => o.statuses);
    // Every request answered (0: none came), and no 500.
    expect(statuses.filter((status) => status === 0 || (status >= 500 && status !== 503))).toEqual([]);
    expect(outcomes.filter((o) => o.kind !== 'read' && ![200, 201].includes(o.statuses.at(-1)!)).map((o) => `${o.kind} ${o.statuses.join(',')}`)).toEqual([]);

    // Every acknowledged create and bank event is on the new primary, once.
    const created = outcomes.filter((o) => o.kind === 'create').map((o) => o.id!);
    const externalIds = outcomes.filter((o) => o.kind === 'create').map((o) => String(o.body!.externalId));
    const received = outcomes.filter((o) => o.kind === 'webhook').map((o) => o.eventId!);
    const [documents] = await standby.query<{ n: number; distinct: number }>(
      'SELECT count(*)::int AS n, count(DISTINCT external_id)::int AS distinct FROM documents WHERE id = ANY ($1::uuid[]) OR external_id = ANY ($2)',
      [created, externalIds],
    );
    expect(documents).toEqual({ n: created.length, distinct: created.length });
    // A bank event sent again after its answer was lost (it had committed) is recorded apart, as a duplicate.
    const [events] = await standby.query<{ n: number; distinct: number; duplicates: number }>(
      `SELECT count(*) FILTER (WHERE outcome <> 'duplicate')::int AS n, count(DISTINCT event_id)::int AS distinct, count(*) FILTER (WHERE outcome = 'duplicate')::int AS duplicates
         FROM webhook_events WHERE event_id = ANY ($1)`,
      [received],
    );
    expect({ n: events.n, distinct: events.distinct }).toEqual({ n: received.length, distinct: received.length });

    // Back within seconds of the switch: the first request started after it that succeeded.
    const after = answersAfter(outcomes, switchedAt).filter((o) => [200, 201].includes(o.statuses.at(-1)!));
    const firstSuccessMs = Math.min(...after.map((o) => o.endedAt)) - switchedAt;
    expect(firstSuccessMs).toBeLessThan(10_000);
    const unavailable = statuses.filter((status) => status === 503).length;
    expect(unavailable).toBeGreaterThan(0);
    // Readiness said 503 in between (the failover waited for it), and 200 again after, on both instances.
    const readyAgain = run_.bases.map((base) => run_.readiness.find((r) => r.base === base && r.status === 200 && r.at > switchedAt));
    expect(readyAgain.every((r) => r !== undefined)).toBe(true);

    // The follower, whose cursors came from the old primary, saw every event on the new one once, in order.
    const stored = await standby.query<{ id: string }>('SELECT id::text FROM document_events WHERE source = $1 ORDER BY xid, id', [run_.source]);
    await run_.feed.stop(run_.bases[0], stored.length);
    expect(run_.feed.events.map((e) => e.id)).toEqual(stored.map((e) => e.id));
    expect(new Set(run_.feed.events.map((e) => e.id)).size).toBe(run_.feed.events.length);

    // Push: every document.created event reaches the receiver at least once, those under way at the kill too.
    const pushed = run_.feed.events.filter((e) => e.type === 'document.created');
    expect(pushed.length).toBe(created.length);
    await waitFor(async () => pushed.every((e) => run_.receiver.attemptsOf(e.id).length > 0), 'every push delivery', 90_000);

    // The instance led to the standby answered 503, never 500, and the standby's refusal said nothing was saved.
    expect(readOnly.attempts.filter((a) => a.status !== 503)).toEqual([]);
    const refused = readOnly.attempts.filter((a) => a.detail === READ_ONLY);
    expect(refused).toHaveLength(REFUSALS);
    expect(refused.filter((a) => a.code !== 'SERVICE_UNAVAILABLE' || a.retryAfter !== '1')).toEqual([]);
    // Each refused connection was closed rather than handed out again: every refusal (the load's too) came
    // on a connection the proxy relayed to the standby anew.
    expect(readOnly.refusals).toBeGreaterThanOrEqual(REFUSALS);
    expect(readOnly.connections).toBeGreaterThanOrEqual(readOnly.refusals);
    // After the switch, the same create under the same key is saved, once.
    const again = await fetch(`${run_.bases[1]}/api/v1/documents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': run_.key, 'x-idempotency-key': readOnly.create.key },
      body: JSON.stringify(readOnly.create.body),
    });
    expect(again.status).toBe(201);
    expect(await standby.query('SELECT id FROM documents WHERE external_id = $1', [readOnly.create.body.externalId])).toHaveLength(1);

    // The first instance's retention job, whose connections led to the old primary, purges on the new one.
    const purgedBefore = await metric(run_.bases[0], 'retention_purged_rows_total', 'table', 'admin_audit_log');
    const retentionStartedAt = performance.now();
    const entry = await expiredAuditEntry(standby);
    await waitFor(
      async () =>
        (await auditEntryGone(standby, entry)) && (await metric(run_.bases[0], 'retention_purged_rows_total', 'table', 'admin_audit_log')) > purgedBefore,
      'the retention job purging on the new primary',
      60_000,
    );
    const retentionAfterMs = performance.now() - retentionStartedAt;

    // TCP keepalive, as the kernel runs it, on the instances' connections to the new primary: the pool's, the
    // LISTEN one and the readiness probe's. The wait is for a moment with nothing in flight on any of them (a
    // socket then runs its retransmission timer instead).
    const sockets = await waitFor(
      async () => {
        const seen = (
          await Promise.all(run_.proxies.map(async (proxy, instance) => (await gatewaySockets(standby, proxy)).map((s) => ({ instance, ...s }))))
        ).flat();
        const holds = (instance: number, name: string) => seen.some((s) => s.instance === instance && s.name === name);
        const complete = [0, 1].every((instance) => holds(instance, 'tax-document-gateway') && holds(instance, 'tax-document-gateway-listener'));
        return complete && seen.every((s) => s.timer !== 'retransmit' && s.timer !== 'zero-window probe') && seen;
      },
      "the instances' connections to the new primary, with nothing in flight",
      60_000,
    );
    // The readiness probe's connection, when it holds one at that moment, as well.
    expect(sockets.map((s) => `${s.instance} ${s.name} ${s.timer}`)).toEqual(sockets.map((s) => `${s.instance} ${s.name} keepalive`));
    // The gateway's idle time, not the kernel's default (two hours): a probe's timer runs the probe interval.
    const probeIntervalMs = Number(readFileSync('/proc/sys/net/ipv4/tcp_keepalive_intvl', 'utf8')) * 1000;
    expect(Math.max(...sockets.map((s) => s.leftMs))).toBeLessThanOrEqual(Math.max(KEEPALIVE_INITIAL_DELAY_MS, probeIntervalMs));

    process.stdout.write(
      `failover (synchronous): ${created.length} creates and ${received.length} bank events acknowledged, 0 lost (${events.duplicates} bank events recorded again as duplicates); first success ${Math.round(firstSuccessMs)} ms after the switch ` +
        `(${Math.round(switchedAt - killedAt)} ms from the kill to the switch); ${unavailable} answers 503; the feed follower read ${run_.feed.events.length} events; ${pushed.length} push deliveries, ${pushed.filter((e) => run_.receiver.attemptsOf(e.id).length > 1).length} of them more than once\n` +
        `  an instance led to the standby before its promotion: ${readOnly.attempts.length - refused.length} answers 503 before it reached the standby, then ${refused.length} creates 503 read_only, ` +
        `${readOnly.refusals} read_only 503s in all on ${readOnly.connections} connections relayed to the standby; the same create 201 after the switch\n` +
        `  retention: an expired audit entry purged ${Math.round(retentionBeforeMs)} ms after its insert on the old primary, ${Math.round(retentionAfterMs)} ms after its insert on the new one\n` +
        `  keepalive: ${sockets.map((s) => `${s.instance}:${s.name.replace('tax-document-gateway', 'pool')} ${s.timer}${s.timer === 'keepalive' ? ` ${s.leftMs} ms` : ''}`).join(', ')}\n`,
    );
  });

  it('with asynchronous replication: measures what acknowledged writes a failover loses, and what a retry of a lost create gets', async () => {
    // The standby falls behind: the primary's WAL sender stopped while it goes on acknowledging commits.
    let sender = 0;
    const run_ = await failover('async', false, {
      beforeKill: async ({ primary }) => {
        sender = (await primary.query<{ pid: number }>('SELECT pid FROM pg_stat_replication', [], 'postgres'))[0].pid;
        process.kill(sender, 'SIGSTOP');
        await new Promise((resolve) => setTimeout(resolve, 1500));
      },
    });
    const { outcomes, standby } = run_;
    expect(outcomes.flatMap((o) => o.statuses).filter((status) => status >= 500 && status !== 503)).toEqual([]);
    const creates = outcomes.filter((o) => o.kind === 'create' && o.statuses.at(-1) === 201);
    const present = new Set(
      (await standby.query<{ id: string }>('SELECT id::text FROM documents WHERE id = ANY ($1::uuid[])', [creates.map((o) => o.id!)])).map((r) => r.id),
    );
    const lost = creates.filter((o) => !present.has(o.id!));
    const received = outcomes.filter((o) => o.kind === 'webhook' && o.statuses.at(-1) === 200).map((o) => o.eventId!);
    const kept = (await standby.query<{ n: number }>('SELECT count(DISTINCT event_id)::int AS n FROM webhook_events WHERE event_id = ANY ($1)', [received]))[0]
      .n;

    let retried = 'no acknowledged create was lost in this run';
    if (lost.length > 0) {
      const res = await fetch(`${run_.bases[0]}/api/v1/documents`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': run_.key, 'x-idempotency-key': lost[0].key! },
        body: JSON.stringify(lost[0].body),
      });
      const body = (await res.json()) as { id?: string };
      retried = `a retry of a lost create under its key got ${res.status}, ${body.id === lost[0].id ? 'the same document' : body.id ? 'a second document (another id)' : 'no document'}`;
    }
    expect(creates.length).toBeGreaterThan(0);
    process.stdout.write(
      `failover (asynchronous, WAL sender stopped for 1.5 s before the kill): ${lost.length} of ${creates.length} acknowledged creates and ` +
        `${received.length - kept} of ${received.length} acknowledged bank events lost; ${retried}\n`,
    );
  });
});

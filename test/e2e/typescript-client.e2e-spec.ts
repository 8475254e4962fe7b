import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import {
  DocumentEvent,
  GatewayClient,
  GatewayClientOptions,
  GatewayNetworkError,
  GatewayProblemError,
  GatewayTimeoutError,
  GatewayWebhookVerificationError,
  RetryEvent,
} from '../../clients/typescript/src/index.js';
import { ENDPOINTS_LOCK_NAMESPACE } from '../../src/outbound-webhooks/webhook-endpoints.repository.js';
import { holdDocumentInsert, holdInsert } from '../support/database.js';
import { documentBody, IssuedKey, newIdempotencyKey, newSourceWithKey, postDocument } from '../support/factories.js';
import { ROOT, spawnNode, waitFor } from '../support/processes.js';
import { ScriptedProxy } from '../support/scripted-proxy.js';
import { startTestApp, TestApp } from '../support/test-app.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

const run = promisify(execFile);
const CLIENT = join(ROOT, 'clients', 'typescript');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

/** The create body the client takes, from the factory every e2e test uses. */
const newDocument = (source: string, overrides: Record<string, unknown> = {}) =>
  documentBody(source, overrides) as Parameters<GatewayClient['documents']['create']>[0];

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of iterable) items.push(item);
  return items;
}

/** Where two texts first differ, as a line number and both lines; null when they are equal. */
function firstDifference(actual: string, expected: string): string | null {
  if (actual === expected) return null;
  const a = actual.split('\n');
  const b = expected.split('\n');
  const line = a.findIndex((text, i) => text !== b[i]);
  const at = line === -1 ? a.length : line;
  return `line ${at + 1}: generated ${JSON.stringify(a[at])}, checked in ${JSON.stringify(b[at])}`;
}

describe('the TypeScript client (clients/typescript) against a real gateway', () => {
  let t: TestApp;
  let baseUrl: string;
  const proxies: ScriptedProxy[] = [];

  const proxy = async (script: ConstructorParameters<typeof ScriptedProxy>[1]) => {
    const started = await new ScriptedProxy(baseUrl, script).start();
    proxies.push(started);
    return started;
  };
  const clientOf = (key: IssuedKey, options: Partial<GatewayClientOptions> = {}) => new GatewayClient({ baseUrl, apiKey: key.key, ...options });
  const documentsWith = async (db: Client, source: string, externalId: unknown) =>
    (await db.query('SELECT id FROM documents WHERE source = $1 AND external_id = $2', [source, externalId])).rows.map((row: { id: string }) => row.id);

  beforeAll(async () => {
    t = await startTestApp({ env: { OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = await t.app.getUrl();
  });
  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.stop()));
    await t?.close();
  });

  it('is built on types that are exactly those generated from the OpenAPI document the gateway serves now', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'client-types-'));
    try {
      const documentFile = join(dir, 'openapi.json');
      await writeFile(documentFile, await (await fetch(`${baseUrl}/docs/openapi.json`)).text());
      const { stdout: generated } = await run(process.execPath, [join(CLIENT, 'scripts', 'generate-types.mjs'), documentFile, '--stdout'], {
        maxBuffer: 64 * 1024 * 1024,
      });
      const checkedIn = await readFile(join(CLIENT, 'src', 'generated', 'openapi.ts'), 'utf8');
      const difference = firstDifference(generated, checkedIn);
      expect(difference && `${difference}; regenerate with \`npm run client:types\` against a gateway built from this tree`).toBeNull();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe('documents.create', () => {
    it('retried after the answer to a committed create was lost: one document, the original answer, one idempotency key', async () => {
      const acme = await newSourceWithKey(t.app);
      const lossy = await proxy((index) => (index === 0 ? 'drop' : 'relay'));
      const retries: RetryEvent[] = [];
      const body = newDocument(acme.source);

      const created = await new GatewayClient({ baseUrl: lossy.url, apiKey: acme.key, onRetry: (event) => retries.push(event) }).documents.create(body);

      expect(lossy.requests.map((request) => `${request.method} ${request.url}`)).toEqual(['POST /api/v1/documents', 'POST /api/v1/documents']);
      const [firstKey, secondKey] = lossy.headerValues('x-idempotency-key');
      expect(firstKey).toMatch(/^[a-zA-Z0-9._:-]{8,128}$/);
      expect(secondKey).toBe(firstKey);
      // The gateway committed the first attempt; the retry got that answer back, replayed.
      const [lost, replayed] = lossy.answers;
      expect([lost?.status, replayed?.status, replayed?.headers['idempotent-replayed']]).toEqual([201, 201, 'true']);
      expect(created).toEqual(JSON.parse(lost!.body));
      expect(await documentsWith(t.db, acme.source, body.externalId)).toEqual([created.id]);
      expect(retries.map((retry) => retry.error)).toEqual([expect.any(GatewayNetworkError)]);
    });

    it('retried after an attempt timed out while the gateway committed it: one document, the original answer', async () => {
      const acme = await newSourceWithKey(t.app);
      const slow = await proxy((index) => (index === 0 ? 'withhold' : 'relay'));
      const retries: RetryEvent[] = [];
      const body = newDocument(acme.source);

      const created = await new GatewayClient({
        baseUrl: slow.url,
        apiKey: acme.key,
        timeoutMs: 1000,
        onRetry: (event) => retries.push(event),
      }).documents.create(body);

      expect(retries.map((retry) => retry.error)).toEqual([expect.any(GatewayTimeoutError)]);
      expect(new Set(slow.headerValues('x-idempotency-key')).size).toBe(1);
      expect(created).toEqual(JSON.parse(slow.answers[0]!.body));
      expect(await documentsWith(t.db, acme.source, body.externalId)).toEqual([created.id]);
    });

    it("waits while its idempotency key is in use (409) and then returns the first request's answer", async () => {
      const acme = await newSourceWithKey(t.app);
      const body = newDocument(acme.source);
      const idempotencyKey = newIdempotencyKey();
      const hold = await holdDocumentInsert(t.db, t.databaseUrl, body.externalId);
      try {
        const first = postDocument(t.app, acme.key, body, idempotencyKey);
        await hold.held();
        const retries: RetryEvent[] = [];
        const creating = clientOf(acme, { onRetry: (event) => retries.push(event) }).documents.create(body, { idempotencyKey });
        await waitFor(async () => retries.length > 0, 'the client to find the key in use');
        await hold.release();
        const [firstAnswer, created] = await Promise.all([first, creating]);

        expect(retries[0].error).toMatchObject({ status: 409, code: 'IDEMPOTENCY_KEY_IN_USE' });
        expect(retries[0].delayMs).toBeGreaterThanOrEqual(1000);
        expect(firstAnswer.statusCode).toBe(201);
        expect(created).toEqual(firstAnswer.json());
        expect(await documentsWith(t.db, acme.source, body.externalId)).toEqual([created.id]);
      } finally {
        await hold.remove();
      }
    });

    it('does not retry a 4xx a retry cannot fix, and surfaces its problem+json typed', async () => {
      const acme = await newSourceWithKey(t.app);
      const relay = await proxy(() => 'relay');
      const client = new GatewayClient({ baseUrl: relay.url, apiKey: acme.key });

      const invalid = await client.documents
        .create(newDocument(acme.source, { taxpayer: { taxId: 'DE1', name: 'Muster GmbH', country: 'de' }, taxAmount: '200.00' }))
        .catch((error: unknown) => error);
      expect(invalid).toBeInstanceOf(GatewayProblemError);
      const problem = invalid as GatewayProblemError;
      expect({ status: problem.status, code: problem.code, fields: problem.errors.map((e) => e.field).sort(), attempts: problem.attempts }).toEqual({
        status: 422,
        code: 'VALIDATION_ERROR',
        fields: ['taxAmount', 'taxpayer.country'],
        attempts: 1,
      });
      // The message names every field the server refused, so an uncaught error says what to fix.
      const body422 = JSON.parse(relay.answers[0]!.body) as { errors: Array<{ field: string; message: string }> };
      expect(problem.message.split('\n')).toEqual([
        '422 VALIDATION_ERROR: The request is not valid',
        ...body422.errors.map((e) => `  ${e.field}: ${e.message}`),
      ]);
      expect(problem.requestId).toBe(relay.answers[0]!.headers['x-request-id']);
      expect(problem.problem).toEqual(JSON.parse(relay.answers[0]!.body));

      const body = newDocument(acme.source);
      await client.documents.create(body);
      await expect(client.documents.create(body)).rejects.toMatchObject({ status: 409, code: 'DUPLICATE_DOCUMENT', attempts: 1 });
      await expect(new GatewayClient({ baseUrl: relay.url, apiKey: 'sk_tax_unknown' }).me()).rejects.toMatchObject({
        status: 401,
        code: 'UNAUTHORIZED',
        attempts: 1,
      });
      // One request each: the invalid body, the create, its duplicate, the unknown key.
      expect(relay.requests).toHaveLength(4);
      expect(await documentsWith(t.db, acme.source, body.externalId)).toHaveLength(1);
    });
  });

  describe('a gateway that refuses for now', () => {
    let limited: TestApp;
    let limitedUrl: string;

    beforeAll(async () => {
      // 20 requests a minute per key: after a burst of 20, one every 3 s. A lock held longer than
      // 100 ms is the gateway's 503 SERVICE_UNAVAILABLE with Retry-After: 1.
      limited = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '20', DB_LOCK_TIMEOUT_MS: '100' } });
      await limited.app.listen({ port: 0, host: '127.0.0.1' });
      limitedUrl = await limited.app.getUrl();
    });
    afterAll(() => limited?.close());

    it("is waited out per Retry-After when it is the key's rate limit (429)", async () => {
      const acme = await newSourceWithKey(limited.app);
      // The burst of 20 passes; the limit gives one more every 3 s, so a slow machine may see a few more.
      const me = () => fetch(`${limitedUrl}/api/v1/me`, { headers: { 'X-API-Key': acme.key } });
      const burstStarted = Date.now();
      let passed = 0;
      let refused = await me();
      while (refused.status === 200 && passed < 40) {
        passed += 1;
        refused = await me();
      }
      expect(passed).toBeGreaterThanOrEqual(20);
      expect(passed).toBeLessThanOrEqual(20 + Math.ceil((Date.now() - burstStarted) / 3000));
      expect(refused.status).toBe(429);
      const retryAfterMs = Number(refused.headers.get('retry-after')) * 1000;
      expect(retryAfterMs).toBeGreaterThanOrEqual(1000);

      const retries: RetryEvent[] = [];
      const body = newDocument(acme.source);
      const started = Date.now();
      const created = await new GatewayClient({ baseUrl: limitedUrl, apiKey: acme.key, onRetry: (event) => retries.push(event) }).documents.create(body);

      expect(Date.now() - started).toBeGreaterThanOrEqual(retryAfterMs - 100);
      expect(retries.map((retry) => [(retry.error as GatewayProblemError).code, retry.delayMs >= retryAfterMs])).toEqual([['RATE_LIMITED', true]]);
      expect(await documentsWith(limited.db, acme.source, body.externalId)).toEqual([created.id]);
    });

    it('is waited out per Retry-After when the database cannot serve the request (503), and the retry then creates the document once', async () => {
      const acme = await newSourceWithKey(limited.app);
      const body = newDocument(acme.source);
      const retries: RetryEvent[] = [];
      const locker = new Client({ connectionString: limited.databaseUrl });
      await locker.connect();
      try {
        // Every insert into documents waits for this lock, past the gateway's lock timeout.
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE documents IN SHARE MODE');
        const creating = new GatewayClient({ baseUrl: limitedUrl, apiKey: acme.key, onRetry: (event) => retries.push(event) }).documents.create(body);
        await waitFor(async () => retries.length >= 2, 'two 503 answers');
        expect(await documentsWith(limited.db, acme.source, body.externalId)).toEqual([]);
        await locker.query('COMMIT');
        const created = await creating;

        expect(retries.map((retry) => [(retry.error as GatewayProblemError).status, (retry.error as GatewayProblemError).code, retry.delayMs >= 1000])).toEqual(
          [
            [503, 'SERVICE_UNAVAILABLE', true],
            [503, 'SERVICE_UNAVAILABLE', true],
          ],
        );
        expect(created).toMatchObject({ externalId: body.externalId, status: 'PENDING_PAYMENT' });
        expect(await documentsWith(limited.db, acme.source, body.externalId)).toEqual([created.id]);
      } finally {
        await locker.end();
      }
    });
  });

  describe('the event feed', () => {
    it('followed while documents are being created and cancelled, yields every event exactly once, in the order a later full read gives', async () => {
      const acme = await newSourceWithKey(t.app);
      const client = clientOf(acme);
      const stop = new AbortController();
      const expected = new Set<string>();
      const seen: DocumentEvent[] = [];
      // A small page, so that the follower pages while the writers write.
      const feed = client.events.follow({ limit: 7, signal: stop.signal, minIntervalMs: 20, maxIntervalMs: 200 });
      const following = (async () => {
        for await (const event of feed) seen.push(event);
      })();

      const writer = async () => {
        for (let i = 0; i < 8; i += 1) {
          const created = await client.documents.create(newDocument(acme.source));
          expected.add(`document.created ${created.id}`);
          if (i % 2 === 0) {
            await client.documents.cancel(created.id);
            expected.add(`document.status_changed ${created.id}`);
          }
        }
      };
      try {
        await Promise.all([writer(), writer(), writer(), writer(), writer()]);
        await waitFor(async () => seen.length >= expected.size, 'the follower to see as many events as were written');
        // A few more polls, in which a repeated event would show up.
        await new Promise((resolve) => setTimeout(resolve, 500));
      } finally {
        stop.abort();
        await following;
      }

      const described = seen.map((event) => `${event.type} ${event.documentId}`);
      expect(described.sort()).toEqual([...expected].sort());
      expect(new Set(seen.map((event) => event.id)).size).toBe(seen.length);
      const everything = await collect(client.events.list({ limit: 11 }));
      expect(everything.map((event) => event.id)).toEqual(seen.map((event) => event.id));
    });

    it('list() resumes from the cursor it hands out: nothing again, then only what came after', async () => {
      const acme = await newSourceWithKey(t.app);
      const client = clientOf(acme);
      const first = await client.documents.create(newDocument(acme.source));
      const before = await waitFor(async () => {
        const feed = client.events.list();
        const events = await collect(feed);
        return events.some((event) => event.documentId === first.id) && feed;
      }, 'the first event in the feed');
      const stored = before.cursor;
      expect(stored).toEqual(expect.any(String));
      expect(await collect(client.events.list({ after: stored }))).toEqual([]);

      const second = await client.documents.create(newDocument(acme.source));
      const after = await waitFor(async () => {
        const events = await collect(client.events.list({ after: stored }));
        return events.length > 0 && events;
      }, 'the second event in the feed');
      expect(after.map((event) => [event.type, event.documentId])).toEqual([['document.created', second.id]]);
    });
  });

  describe('webhooks.verify', () => {
    it('verifies a message the gateway pushed, and refuses it tampered or under another secret', async () => {
      const receiver = await new WebhookReceiver().start();
      try {
        const acme = await newSourceWithKey(t.app);
        const client = clientOf(acme);
        const endpoint = await client.webhookEndpoints.create({ url: receiver.url, eventTypes: ['document.created'] });
        const created = await client.documents.create(newDocument(acme.source));
        const message = await waitFor(async () => receiver.messages.find((m) => m.body.includes(created.id)), 'the push');

        const verified = client.webhooks.verify(message.headers, message.body, endpoint.secret);
        expect(verified).toEqual({
          type: 'document.created',
          timestamp: verified.data.createdAt,
          data: {
            id: message.headers['webhook-id'],
            type: 'document.created',
            documentId: created.id,
            status: 'PENDING_PAYMENT',
            previousStatus: null,
            createdAt: expect.any(String),
          },
        });
        // The push carries the feed's event exactly.
        const [event] = await waitFor(async () => {
          const events = await collect(client.events.list());
          return events.length > 0 && events;
        }, 'the event in the feed');
        expect(verified.data).toEqual(event);

        const rotated = await client.webhookEndpoints.rotateSecret(endpoint.id);
        for (const [body, secret] of [
          [message.body.replace('PENDING_PAYMENT', 'PAID'), endpoint.secret],
          [message.body, rotated.secret],
        ]) {
          expect(() => client.webhooks.verify(message.headers, body, secret)).toThrow(GatewayWebhookVerificationError);
        }
      } finally {
        await receiver.stop();
      }
    });
  });

  describe('the README example (clients/typescript/examples/integration.ts)', () => {
    it('is the program the README shows', async () => {
      const readme = await readFile(join(CLIENT, 'README.md'), 'utf8');
      const example = await readFile(join(CLIENT, 'examples', 'integration.ts'), 'utf8');
      expect(readme).toContain(`\`\`\`ts\n${example}\`\`\``);
    });

    /** The example run as the README runs it, against this test's gateway, with its state in `stateFile`. */
    const startExample = (key: IssuedKey, stateFile: string, gatewayUrl = baseUrl) =>
      spawnNode(
        ['-r', '@swc-node/register', 'examples/integration.ts'],
        { TAX_GATEWAY_URL: gatewayUrl, TAX_GATEWAY_API_KEY: key.key, PUSH_PORT: '0', STATE_FILE: stateFile },
        CLIENT,
      );
    const endpointsOf = async (source: string) =>
      (await t.db.query('SELECT id FROM webhook_endpoints WHERE source = $1', [source])).rows.map((row: { id: string }) => row.id);
    const registeredBy = (example: ReturnType<typeof spawnNode>) =>
      waitFor(
        async () => /^registered push endpoint (\S+) at /m.exec(example.output())?.[1] ?? (example.child.exitCode !== null && 'exited'),
        'the example to register its endpoint',
        30_000,
      );

    it('type-checks against the built package and runs as written: creates, follows the feed, verifies pushes, resumes where it stopped, deletes its endpoint', async () => {
      // Built as `npm run build` builds it: the example imports the package by its name, i.e. dist/.
      await run(process.execPath, [TSC, '-p', join(CLIENT, 'tsconfig.build.json')]);
      await run(process.execPath, [TSC, '--noEmit', '-p', join(CLIENT, 'tsconfig.json')]);

      const acme = await newSourceWithKey(t.app);
      const dir = await mkdtemp(join(tmpdir(), 'client-example-'));
      const stateFile = join(dir, 'state.json');
      const readState = async () => JSON.parse(await readFile(stateFile, 'utf8'));
      /** One run until its own document came through the feed and as a push, then Ctrl-C; its output. */
      const runUntilItsDocumentArrives = async () => {
        const example = startExample(acme, stateFile);
        try {
          const endpointId = await registeredBy(example);
          expect(await endpointsOf(acme.source)).toEqual([endpointId]);
          const documentId = await waitFor(async () => /^created (\S+) /m.exec(example.output())?.[1], 'the example to create its document');
          await waitFor(
            async () => example.output().includes(`feed document.created ${documentId} PENDING_PAYMENT`),
            'the example to see its event in the feed',
          );
          await waitFor(
            async () => example.output().includes(`push document.created ${documentId} PENDING_PAYMENT`),
            'the example to receive and verify the push',
          );
          example.child.kill('SIGINT');
          expect(await example.exited).toBe(0);
          expect(example.output()).not.toMatch(/refused a push|Error/);
          expect(example.output()).toMatch(new RegExp(`^deleted push endpoint ${endpointId}$`, 'm'));
          expect(await endpointsOf(acme.source)).toEqual([]);
          return { documentId, output: example.output() };
        } finally {
          if (example.child.exitCode === null) example.child.kill('SIGKILL');
        }
      };

      try {
        const first = await runUntilItsDocumentArrives();
        const afterFirst = await readState();
        const second = await runUntilItsDocumentArrives();
        // The second run resumed from the stored cursor; neither left an endpoint behind.
        expect(second.output).not.toContain(first.documentId);
        const afterSecond = await readState();
        const feed = clientOf(acme).events.list();
        await collect(feed);
        expect(afterSecond).toEqual({ cursor: feed.cursor });
        expect(afterFirst.cursor).not.toEqual(afterSecond.cursor);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('deletes its endpoint when it fails after registering it, and when Ctrl-C comes before it follows the feed; the next run deletes one a killed run left', async () => {
      const acme = await newSourceWithKey(t.app);
      const dir = await mkdtemp(join(tmpdir(), 'client-example-'));
      const stateFile = join(dir, 'state.json');
      try {
        // A stored cursor the gateway refuses: the feed fails after the endpoint is registered and the document created.
        await writeFile(stateFile, JSON.stringify({ cursor: 'not-a-cursor' }));
        const failing = startExample(acme, stateFile);
        const failed = await registeredBy(failing);
        expect(await failing.closed).toBe(1);
        expect(failing.stderr()).toMatch(/^422 VALIDATION_ERROR: The request is not valid\n {2}after: /m);
        expect(failing.output()).toContain(`deleted push endpoint ${failed}`);
        expect(await endpointsOf(acme.source)).toEqual([]);

        // Ctrl-C while the document is being created, before the feed is followed.
        await writeFile(stateFile, '{}');
        const hold = await holdInsert(t.db, t.databaseUrl, 'documents', `NEW.source = '${acme.source}'`);
        try {
          const interrupted = startExample(acme, stateFile);
          const endpointId = await registeredBy(interrupted);
          await hold.held();
          interrupted.child.kill('SIGINT');
          // The create is cut short at once; the delete goes through, or waits for the held create's
          // transaction, which holds the source's endpoints lock (see ENDPOINTS_LOCK_NAMESPACE), to end.
          const deleteWaiting = async () =>
            (await t.db.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = $1 AND NOT granted`, [ENDPOINTS_LOCK_NAMESPACE])).rowCount! > 0;
          await waitFor(
            async () => interrupted.output().includes(`deleted push endpoint ${endpointId}`) || (await deleteWaiting()),
            'the example to delete its endpoint',
            30_000,
          );
          await hold.release();
          expect(await interrupted.closed).toBe(0);
          expect(interrupted.output()).toContain(`deleted push endpoint ${endpointId}`);
          expect(interrupted.output()).not.toMatch(/^created /m);
          expect(interrupted.output()).toMatch(/^stopped$/m);
          expect(await endpointsOf(acme.source)).toEqual([]);
        } finally {
          await hold.remove();
        }

        // A run killed outright cannot delete its endpoint; its state names it, and the next run deletes it first.
        const killed = startExample(acme, stateFile);
        const left = await registeredBy(killed);
        await waitFor(async () => /^created /m.test(killed.output()), 'the killed run to create its document', 30_000);
        killed.child.kill('SIGKILL');
        await killed.exited;
        expect(await endpointsOf(acme.source)).toEqual([left]);
        expect(JSON.parse(await readFile(stateFile, 'utf8'))).toMatchObject({ endpointId: left });
        const next = startExample(acme, stateFile);
        const own = await registeredBy(next);
        expect(next.output()).toContain(`deleted push endpoint ${left}`);
        expect(await endpointsOf(acme.source)).toEqual([own]);
        next.child.kill('SIGINT');
        expect(await next.closed).toBe(0);
        expect(await endpointsOf(acme.source)).toEqual([]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('ends with the reasons the server gave: refused a local push endpoint, it names the setting that allows one', async () => {
      // A gateway as it runs by default: push endpoints must be public https URLs.
      const strict = await startTestApp({ databaseUrl: t.databaseUrl });
      const dir = await mkdtemp(join(tmpdir(), 'client-example-'));
      try {
        await strict.app.listen({ port: 0, host: '127.0.0.1' });
        const acme = await newSourceWithKey(strict.app);
        const example = startExample(acme, join(dir, 'state.json'), await strict.app.getUrl());
        expect(await example.closed).toBe(1);
        expect(example.stderr()).toMatch(
          /^422 VALIDATION_ERROR: The request is not valid\n {2}url: .*OUTBOUND_WEBHOOKS_ALLOW_PRIVATE=true.* \(request [0-9a-f-]{36}\)$/m,
        );
      } finally {
        await strict.close();
        await rm(dir, { recursive: true, force: true });
      }
    });
  });
});

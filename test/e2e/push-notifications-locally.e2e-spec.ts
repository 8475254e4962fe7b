import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSecret, signedHeaders } from '../../src/outbound-webhooks/signing.js';
import { documentBody, newIdempotencyKey, newSourceWithKey, postDocument } from '../support/factories.js';
import { ROOT, Spawned, spawnNode, waitFor } from '../support/processes.js';
import { startTestApp, TestApp } from '../support/test-app.js';

const GUIDE = join(ROOT, 'docs', 'push-notifications-locally.md');
const EXAMPLE = join(ROOT, 'clients', 'typescript', 'examples', 'integration.ts');

/** The one fenced block of `language` in the guide that contains `marker`. */
async function guideBlock(language: string, marker: string): Promise<string> {
  const guide = await readFile(GUIDE, 'utf8');
  const blocks = [...guide.matchAll(new RegExp(String.raw`^( *)\x60\x60\x60${language}\n([\s\S]*?)^\1\x60\x60\x60$`, 'gm'))]
    .map(([, indent, body]) =>
      body
        .split('\n')
        .map((line) => line.slice(indent.length))
        .join('\n'),
    )
    .filter((body) => body.includes(marker));
  expect(blocks).toHaveLength(1);
  return blocks[0];
}

/** The endpoint's secret where the guide keeps it: beside the receiver, readable by its owner only. */
async function keepSecret(dir: string, secret: string, mode = 0o600): Promise<void> {
  await writeFile(join(dir, 'webhook-secret'), `${secret}\n`, { mode });
  await chmod(join(dir, 'webhook-secret'), mode);
}

describe('docs/push-notifications-locally.md, as written', () => {
  let t: TestApp;
  let dir: string;
  let receiver: Spawned | undefined;

  beforeAll(async () => {
    t = await startTestApp({ env: { OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    // The guide's receiver in a directory of its own, finding `standardwebhooks` as after `npm i` there.
    dir = await mkdtemp(join(tmpdir(), 'push-guide-'));
    await symlink(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    await writeFile(join(dir, 'receiver.mjs'), await guideBlock('js', 'standardwebhooks'));
  });
  afterAll(async () => {
    if (receiver?.child.exitCode === null) {
      receiver.child.kill('SIGTERM');
      await receiver.exited;
    }
    await rm(dir, { recursive: true, force: true });
    await t?.close();
  });

  it('registers its endpoint on the port its receiver listens on, which the client example does not use', async () => {
    const registration = await guideBlock('bash', 'webhook-endpoints -H');
    const registered = /"url":"http:\/\/127\.0\.0\.1:(\d+)\/hooks\/tax-gateway"/.exec(registration)?.[1];
    const receiverScript = await guideBlock('js', 'standardwebhooks');
    const listens = /RECEIVER_PORT \?\? (\d+)/.exec(receiverScript)?.[1];
    const examplePort = /PUSH_PORT \?\? (\d+)/.exec(await readFile(EXAMPLE, 'utf8'))?.[1];
    expect(registered).toBeDefined();
    expect([registered, examplePort === registered]).toEqual([listens, false]);
  });

  it("keeps the endpoint's secret in a file of mode 0600 in the receiver's directory, whatever the shell's umask", async () => {
    const registration = await guideBlock('bash', 'webhook-endpoints -H');
    const line = registration.split('\n').find((l) => l.includes('umask 077'));
    expect(line).toContain('> ~/tax-gateway-receiver/webhook-secret');
    const secret = generateSecret();
    const home = await mkdtemp(join(tmpdir(), 'push-guide-home-'));
    try {
      await mkdir(join(home, 'tax-gateway-receiver'));
      execFileSync('bash', ['-c', `umask 022; ${line}`], { env: { ...process.env, HOME: home, ENDPOINT: JSON.stringify({ id: 'x', secret }) } });
      const file = join(home, 'tax-gateway-receiver', 'webhook-secret');
      expect([(await stat(file)).mode & 0o777, (await readFile(file, 'utf8')).trim()]).toEqual([0o600, secret]);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });

  it('receives a verified push, and says why it refuses each message it refuses, never with the secret or the signature', async () => {
    const key = await newSourceWithKey(t.app);
    receiver = spawnNode(['receiver.mjs'], { RECEIVER_PORT: '0' }, dir);
    // Without the secret's file it stops at once and says where the secret goes.
    expect(await receiver.closed).toBe(1);
    expect(receiver.stderr()).toContain(`Keep the secret the endpoint was registered with in ${join(dir, 'webhook-secret')}, mode 0600`);
    // Nor with a file others may read.
    const secret = generateSecret();
    await keepSecret(dir, secret, 0o644);
    receiver = spawnNode(['receiver.mjs'], { RECEIVER_PORT: '0' }, dir);
    expect(await receiver.closed).toBe(1);
    expect(receiver.stderr()).toContain('others may read it: chmod 600 it');
    expect(receiver.output()).not.toContain(secret);

    // Step 2, with the receiver's own port: the test must not assume 4000 is free.
    await keepSecret(dir, secret);
    receiver = spawnNode(['receiver.mjs'], { RECEIVER_PORT: '0' }, dir);
    const url = await waitFor(
      async () => /^listening on (\S+)$/m.exec(receiver!.output())?.[1] ?? (receiver!.child.exitCode !== null && 'exited'),
      'the receiver to listen',
      30_000,
    );
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/hooks\/tax-gateway$/);
    const endpoint = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhook-endpoints',
      headers: { 'x-api-key': key.key, 'x-idempotency-key': newIdempotencyKey() },
      payload: { url, description: 'local try' },
    });
    expect(endpoint.statusCode).toBe(201);
    const endpointSecret = endpoint.json().secret as string;
    // The receiver was started with a secret of its own, as after registering an endpoint in an earlier try:
    // the gateway's pushes are refused, and the receiver says why.
    const document = (await postDocument(t.app, key.key, documentBody(key.source))).json<{ id: string }>();
    await waitFor(
      async () => /^refused POST \/hooks\/tax-gateway \(webhook-id \d+\) with 400: No matching signature found$/m.test(receiver!.output()),
      'the refusal of a push signed with another secret',
      30_000,
    );

    const send = async (headers: Record<string, string>, body: string, path = '/hooks/tax-gateway', method = 'POST') =>
      (await fetch(new URL(path, url), { method, headers, ...(method === 'POST' ? { body } : {}) })).status;
    const now = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({
      type: 'document.created',
      timestamp: new Date().toISOString(),
      data: { id: '900001', type: 'document.created', documentId: document.id, status: 'PENDING_PAYMENT' },
    });
    const stale = signedHeaders([secret], '900002', now - 600, body);
    const notJson = signedHeaders([secret], '900003', now, 'not json');
    const answers = [
      await send(signedHeaders([secret], '900001', now, body), body),
      await send(stale, body),
      await send(notJson, 'not json'),
      await send({ 'content-type': 'application/json' }, body),
      await send({}, '', '/', 'GET'),
    ];
    expect(answers).toEqual([204, 400, 400, 400, 404]);
    await waitFor(async () => receiver!.output().includes('refused GET /'), 'the last line');
    const lines = receiver.output().split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([
        `900001 document.created ${document.id} PENDING_PAYMENT`,
        'refused POST /hooks/tax-gateway (webhook-id 900002) with 400: Message timestamp too old',
        expect.stringMatching(/^refused POST \/hooks\/tax-gateway \(webhook-id 900003\) with 400: the body is not JSON \(.+\)$/),
        'refused POST /hooks/tax-gateway (webhook-id -) with 400: Missing required headers',
        'refused GET / (webhook-id -) with 404: not POST /hooks/tax-gateway',
      ]),
    );
    for (const secretOrSignature of [
      secret,
      endpointSecret,
      secret.slice('whsec_'.length),
      stale['webhook-signature'],
      notJson['webhook-signature'].slice('v1,'.length),
    ]) {
      expect(receiver.output()).not.toContain(secretOrSignature);
    }
  });

  it('with the secret the endpoint was registered with, verifies and prints the pushes the gateway makes, also once restarted', async () => {
    const key = await newSourceWithKey(t.app);
    receiver?.child.kill('SIGTERM');
    await receiver?.exited;
    // Step 2 first, as the guide goes: the port is the test's choice, on loopback.
    const placeholder = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhook-endpoints',
      headers: { 'x-api-key': key.key, 'x-idempotency-key': newIdempotencyKey() },
      payload: { url: 'http://127.0.0.1:1/hooks/tax-gateway', description: 'local try' },
    });
    expect(placeholder.statusCode).toBe(201);
    const { id, secret } = placeholder.json<{ id: string; secret: string }>();
    await keepSecret(dir, secret);
    receiver = spawnNode(['receiver.mjs'], { RECEIVER_PORT: '0' }, dir);
    const url = await waitFor(
      async () => /^listening on (\S+)$/m.exec(receiver!.output())?.[1] ?? (receiver!.child.exitCode !== null && 'exited'),
      'the receiver to listen',
      30_000,
    );
    const moved = await t.app.inject({ method: 'PATCH', url: `/api/v1/webhook-endpoints/${id}`, headers: { 'x-api-key': key.key }, payload: { url } });
    expect(moved.statusCode).toBe(200);

    const document = (await postDocument(t.app, key.key, documentBody(key.source))).json<{ id: string }>();
    await waitFor(
      async () => new RegExp(`^\\d+ document.created ${document.id} PENDING_PAYMENT$`, 'm').test(receiver!.output()),
      'the push to be printed',
      30_000,
    );
    expect(receiver.output()).not.toContain('refused');

    // Restarted (a new terminal: no variable set), on the endpoint's port, it reads the same file and verifies.
    receiver.child.kill('SIGTERM');
    await receiver.exited;
    receiver = spawnNode(['receiver.mjs'], { RECEIVER_PORT: new URL(url).port }, dir);
    await waitFor(
      async () => receiver!.output().includes(`listening on ${url}`) || (receiver!.child.exitCode !== null && 'exited'),
      'the restarted receiver to listen',
      30_000,
    );
    expect(receiver.child.exitCode).toBeNull();
    const second = (await postDocument(t.app, key.key, documentBody(key.source))).json<{ id: string }>();
    await waitFor(
      async () => new RegExp(`^\\d+ document.created ${second.id} PENDING_PAYMENT$`, 'm').test(receiver!.output()),
      'the push to the restarted receiver',
      30_000,
    );
    expect(receiver.output()).not.toContain('refused');

    // Step 6: deleting the endpoint.
    const deleted = await t.app.inject({ method: 'DELETE', url: `/api/v1/webhook-endpoints/${id}`, headers: { 'x-api-key': key.key } });
    expect(deleted.statusCode).toBe(204);
  });
});

import { randomBytes } from 'node:crypto';
import { freePort } from '../../src/database/embedded-postgres.js';
import { BANK_WEBHOOK_PATH } from '../../src/webhooks/webhook-signature.js';
import { createTestDatabase, dropTestDatabase } from '../support/database.js';
import { documentBody, newIdempotencyKey, signedWebhook } from '../support/factories.js';
import { Spawned, spawnNode, startGateway, waitFor } from '../support/processes.js';
import { startReadyGateway, TEST_ADMIN_TOKEN, TEST_WEBHOOK_SECRET } from '../support/test-app.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';

/** An attribute as OTLP/JSON carries it. */
type OtlpAttribute = { key: string; value: Record<string, unknown> };
interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: OtlpAttribute[];
  links?: Array<{ traceId: string; spanId: string }>;
  events?: Array<{ name: string; attributes?: OtlpAttribute[] }>;
  scope: string;
}

const valueOf = (attribute: OtlpAttribute | undefined) => (attribute ? Object.values(attribute.value)[0] : undefined);
const attr = (span: ExportedSpan, key: string) => valueOf(span.attributes.find((a) => a.key === key));

/** Every span the receiver got, from OTLP/JSON export requests. */
function spansOf(collector: WebhookReceiver): ExportedSpan[] {
  return collector.messages.flatMap((message) =>
    (JSON.parse(message.body).resourceSpans ?? []).flatMap((rs: { scopeSpans?: Array<{ scope: { name: string }; spans?: ExportedSpan[] }> }) =>
      (rs.scopeSpans ?? []).flatMap((ss) => (ss.spans ?? []).map((span) => ({ ...span, scope: ss.scope.name }))),
    ),
  );
}

/**
 * The built gateway exporting to a small OTLP/HTTP receiver of the test, as it would to a collector: what
 * its spans say, how they join a client's trace and each other across time, and what they never carry.
 */
describe('tracing with OpenTelemetry', () => {
  let databaseUrl: string;
  let collector: WebhookReceiver;
  let endpoint: WebhookReceiver;
  let gateway: Spawned;
  let base: string;

  const start = (env: Record<string, string>) =>
    startReadyGateway(databaseUrl, {
      OUTBOUND_WEBHOOKS_ALLOW_PRIVATE: 'true',
      OUTBOUND_WEBHOOKS_POLL_SECONDS: '1',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}`,
      // The batch processor's delay, so the test's spans arrive soon after they end.
      OTEL_BSP_SCHEDULE_DELAY: '100',
      ...env,
    });

  beforeAll(async () => {
    databaseUrl = await createTestDatabase();
    collector = await new WebhookReceiver(() => ({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' })).start('/v1/traces');
    endpoint = await new WebhookReceiver().start();
    ({ spawned: gateway, url: base } = await start({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', LOG_LEVEL: 'debug', OTEL_SERVICE_NAME: 'gateway-under-test' }));
  });
  afterAll(async () => {
    if (gateway?.child.exitCode === null) {
      gateway.child.kill('SIGTERM');
      await gateway.exited;
    }
    await collector?.stop();
    await endpoint?.stop();
    await dropTestDatabase(databaseUrl);
  });

  it('traces a create, its replay, its push delivery and the bank event that pays it, joined to the client trace, without secrets', async () => {
    const issued = await fetch(`${base}/admin/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ source: 'traced-erp' }),
    });
    const { key } = (await issued.json()) as { key: string };
    const registered = await fetch(`${base}/api/v1/webhook-endpoints`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'x-idempotency-key': newIdempotencyKey() },
      body: JSON.stringify({ url: endpoint.url, eventTypes: ['document.created'] }),
    });
    expect(registered.status).toBe(201);
    const { secret: endpointSecret } = (await registered.json()) as { secret: string };

    // The client's own trace, continued by the gateway.
    const clientTraceId = randomBytes(16).toString('hex');
    const clientSpanId = randomBytes(8).toString('hex');
    const providerReference = `PAY-TRACE-${randomBytes(4).toString('hex')}`;
    const body = JSON.stringify(
      documentBody('traced-erp', { providerReference, taxpayer: { taxId: 'DE999888777', name: 'Secret Taxpayer GmbH', country: 'DE' } }),
    );
    const idempotencyKey = newIdempotencyKey();
    const create = () =>
      fetch(`${base}/api/v1/documents`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': key,
          'x-idempotency-key': idempotencyKey,
          traceparent: `00-${clientTraceId}-${clientSpanId}-01`,
        },
        body,
      });
    const created = await create();
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const replay = await create();
    expect(replay.headers.get('idempotent-replayed')).toBe('true');

    const bankEvent = signedWebhook(TEST_WEBHOOK_SECRET, {
      eventId: `evt-trace-${randomBytes(4).toString('hex')}`,
      eventType: 'PAYMENT_STATUS',
      status: 'PAID',
      providerReference,
    });
    const paid = await fetch(`${base}${BANK_WEBHOOK_PATH}`, { method: 'POST', headers: bankEvent.headers, body: bankEvent.raw });
    expect(paid.status).toBe(200);
    const read = await fetch(`${base}/api/v1/documents/${id}`, { headers: { 'x-api-key': key } });
    expect(read.status).toBe(200);

    const [pushed] = await waitFor(async () => endpoint.messages.length > 0 && endpoint.messages, 'the push delivery');
    const traceparent = String(pushed.headers.traceparent);
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    const servers = (spans: ExportedSpan[]) => spans.filter((s) => s.kind === 2 && s.scope === '@opentelemetry/instrumentation-http');
    // Spans are exported in batches, in whatever order they end: wait for each one the test reads.
    const spans = await waitFor(async () => {
      const all = spansOf(collector);
      const routes = servers(all).map((s) => attr(s, 'http.route'));
      const done =
        servers(all).filter((s) => s.traceId === clientTraceId).length === 2 &&
        routes.includes(BANK_WEBHOOK_PATH) &&
        routes.includes('/api/v1/documents/:id') &&
        all.some((s) => s.name === 'push delivery') &&
        all.some((s) => s.scope === '@opentelemetry/instrumentation-undici');
      return done && all;
    }, 'the spans of the create, its replay, the bank event, the read and the push delivery');

    // The create: a server span in the client's trace, under the client's span, named by its route template.
    const [first, second] = servers(spans).filter((s) => s.traceId === clientTraceId);
    expect(first.parentSpanId).toBe(clientSpanId);
    expect(first.name).toBe('POST /api/v1/documents');
    expect(attr(first, 'http.route')).toBe('/api/v1/documents');
    expect(attr(first, 'gateway.source')).toBe('traced-erp');
    expect(attr(first, 'gateway.idempotency.outcome')).toBe('created');
    expect(attr(first, 'http.response.status_code')).toBe(201);
    // The replay of the same request, marked as one.
    expect(attr(second, 'gateway.idempotency.outcome')).toBe('replayed');

    // Its statements: names and text, never the values.
    const statements = spans.filter((s) => s.scope === '@opentelemetry/instrumentation-pg' && s.traceId === clientTraceId && attr(s, 'db.query.text'));
    expect(statements.map((s) => String(attr(s, 'db.query.text'))).join('\n')).toContain('INSERT INTO documents');
    expect(statements.map((s) => s.name)).toEqual(
      expect.arrayContaining([
        expect.stringContaining('idempotency-record'),
        expect.stringContaining('document-create-findings'),
        expect.stringContaining('writes:document-insert'),
      ]),
    );
    // The push worker's claim, which the create's commit set off, is not part of the create's trace.
    expect(statements.map((s) => s.name)).not.toEqual(expect.arrayContaining([expect.stringContaining('outbound-claim')]));

    // The read: the route template, never the id.
    const readSpan = servers(spans).find((s) => attr(s, 'http.route') === '/api/v1/documents/:id')!;
    expect(readSpan.name).toBe('GET /api/v1/documents/:id');

    // The push delivery: a trace of its own, linked to the create, whose traceparent the endpoint received.
    const delivery = spans.find((s) => s.name === 'push delivery')!;
    expect(delivery.links).toEqual([expect.objectContaining({ traceId: clientTraceId, spanId: first.spanId })]);
    expect(attr(delivery, 'gateway.delivery.result')).toBe('delivered');
    expect(traceparent.split('-')[1]).toBe(delivery.traceId);
    const client = spans.find((s) => s.scope === '@opentelemetry/instrumentation-undici' && s.traceId === delivery.traceId)!;
    expect(traceparent.split('-')[2]).toBe(client.spanId);

    // The bank event: its outcome, and a link to the trace that created the document it paid.
    const bank = servers(spans).find((s) => attr(s, 'http.route') === BANK_WEBHOOK_PATH)!;
    expect(attr(bank, 'gateway.bank_event.outcome')).toBe('applied');
    expect(bank.links).toEqual([expect.objectContaining({ traceId: clientTraceId, spanId: first.spanId })]);

    // Logs of the create's request carry its trace.
    const logged = await waitFor(
      async () =>
        gateway
          .stdout()
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as { trace_id?: string; span_id?: string; req?: { method: string; url: string } })
          .find((line) => line.trace_id === clientTraceId && line.req?.method === 'POST'),
      'a log line of the create with its trace_id',
    );
    expect(logged.span_id).toMatch(/^[0-9a-f]{16}$/);

    // Nothing secret, and no body, in any exported span: keys, tokens, secrets, signatures, values, ids in paths.
    const exported = collector.messages.map((m) => m.body).join('\n');
    const { externalId } = JSON.parse(body) as { externalId: string };
    const never = [
      key,
      TEST_ADMIN_TOKEN,
      TEST_WEBHOOK_SECRET,
      endpointSecret,
      bankEvent.headers['x-provider-signature'],
      idempotencyKey,
      'DE999888777',
      'Secret Taxpayer GmbH',
      externalId,
      providerReference,
      `/api/v1/documents/${id}`,
    ];
    for (const secret of never) expect(exported).not.toContain(secret);
    expect(exported).not.toMatch(/stacktrace/);
    const resource = JSON.parse(collector.messages[0].body).resourceSpans[0].resource.attributes as OtlpAttribute[];
    expect(valueOf(resource.find((a) => a.key === 'service.name'))).toBe('gateway-under-test');
  });

  it('loads no OpenTelemetry SDK at all without an endpoint', async () => {
    const loaded = (env: Record<string, string>) =>
      new Promise<string>((resolve) => {
        // The SDK is CommonJS: imported or required, it is in require's cache once loaded.
        const script =
          "await import('./dist/instrument.js'); const { createRequire } = await import('node:module'); console.log(Object.keys(createRequire(import.meta.url).cache).filter((m) => m.includes('@opentelemetry/sdk-node')).length)";
        const probe = spawnNode(['--input-type=module', '-e', script], env);
        void probe.closed.then(() => resolve(probe.stdout().trim()));
      });
    expect(await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBe('0');
    expect(Number(await loaded({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}` }))).toBeGreaterThan(0);
  });

  it('exports OTLP over http/protobuf by default, and refuses an unknown protocol at start', async () => {
    const before = collector.messages.length;
    const other = await start({ LOG_LEVEL: 'warn' });
    try {
      expect((await fetch(`${other.url}/api/v1/me`)).status).toBe(401);
      const message = await waitFor(
        async () => collector.messages.slice(before).find((m) => m.headers['content-type'] === 'application/x-protobuf'),
        'a protobuf export',
      );
      expect(message.body.length).toBeGreaterThan(0);
    } finally {
      other.spawned.child.kill('SIGTERM');
      await other.spawned.exited;
    }
    const port = await freePort();
    const refused = startGateway({
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
      BANK_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'carrier-pigeon',
    });
    expect(await refused.closed).toBe(78);
    expect(refused.stderr()).toContain('OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf, http/json or grpc');
  });
});

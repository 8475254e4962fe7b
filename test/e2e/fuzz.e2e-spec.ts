import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { InjectOptions } from 'light-my-request';
import { BANK_WEBHOOK_PATH, signWebhook } from '../../src/webhooks/webhook-signature.js';
import { adminHeaders, documentBody, newSourceWithKey, postDocument } from '../support/factories.js';
import { startTestApp, TEST_ADMIN_TOKEN, TEST_WEBHOOK_SECRET, TestApp } from '../support/test-app.js';

const RUNS = 10_000;
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

/**
 * Writes a refused request may make by design, left out of the comparison: failed admin tokens are
 * counted per address (the lockout), key use is recorded in batches, and an /api/v1 POST refused for a
 * business reason (404, 409) stores its answer for replays, as the README requires.
 */
const UNCOMPARED_TABLES = new Set(['admin_auth_failures', 'migrations']);
const STORED_REFUSALS = new Set([404, 409]);

describe('fuzz: any request, never a 5xx, always a problem, nothing changed by a refusal', () => {
  let t: TestApp;
  let fingerprintSql: string;
  let tables: string[];

  let fingerprinted: { nextXid: string; tables: Record<string, string> } | null = null;

  /**
   * The tables' fingerprint, recomputed only when some transaction has written since the last one: no
   * new transaction id assigned on the server means no row changed anywhere (read-only transactions
   * take none), which is the case after most refused requests.
   */
  const fingerprint = async (): Promise<Record<string, string>> => {
    const { next } = (await t.db.query('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS next')).rows[0] as { next: string };
    if (fingerprinted?.nextXid !== next) fingerprinted = { nextXid: next, tables: (await t.db.query(fingerprintSql)).rows[0] };
    return fingerprinted.tables;
  };

  beforeAll(async () => {
    // No seal within the run: the archive's tables are compared too, and only the sealer, in the background, writes them.
    t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '1000000', LOG_LEVEL: 'silent', ARCHIVE_SEAL_INTERVAL: 'PT1H' } });
    tables = (await t.db.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`)).rows
      .map((row: { table_name: string }) => row.table_name)
      .filter((name: string) => !UNCOMPARED_TABLES.has(name));
    // Order-independent and cheap: per table, the count and a sum over row versions (xmin and ctid change
    // with every insert, update and delete). API keys are compared by content instead, without the batched
    // last use, which a refused request may legitimately bring forward.
    fingerprintSql = `SELECT ${tables
      .map((name) =>
        name === 'api_keys'
          ? `(SELECT count(*) || ':' || coalesce(sum(hashtext((to_jsonb(x) - 'last_used_at')::text)::numeric), 0) FROM "${name}" x) AS "${name}"`
          : `(SELECT count(*) || ':' || coalesce(sum(hashtext(xmin::text || ctid::text)::numeric), 0) FROM "${name}") AS "${name}"`,
      )
      .join(', ')}`;
  });
  afterAll(() => t.close());

  it(`holds for ${RUNS} generated requests over every route, method and header combination`, async () => {
    const own = await newSourceWithKey(t.app);
    const other = await newSourceWithKey(t.app);
    const revoked = await newSourceWithKey(t.app);
    // Admin routes revoke and rotate whatever id they are given: never the keys the requests use.
    const victim = await newSourceWithKey(t.app);
    await t.app.inject({ method: 'POST', url: `/admin/api-keys/${revoked.id}/revoke`, headers: adminHeaders });
    const ownDocument = (await postDocument(t.app, own.key, documentBody(own.source, { providerReference: 'FUZZ-REF-1' }))).json().id as string;
    const otherDocument = (await postDocument(t.app, other.key, documentBody(other.source))).json().id as string;
    const spec = (await t.app.inject({ method: 'GET', url: '/docs/openapi.json' })).json<{ paths: Record<string, Record<string, unknown>> }>();
    // Every documented route, plus those kept out of the document.
    const templates = [...Object.keys(spec.paths), '/admin', '/admin/console.js', '/admin/console.css', '/metrics', '/docs', '/no/such/route'];
    expect(templates).toEqual(expect.arrayContaining(['/api/v1/documents/{id}/cancel', BANK_WEBHOOK_PATH, '/admin/api-keys/{id}/rotate']));

    const encode = (position: string) => Buffer.from(position).toString('base64url');
    const id = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(ownDocument, otherDocument, victim.id, revoked.id) },
      { weight: 1, arbitrary: fc.uuid() },
      { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map(encodeURIComponent) },
      { weight: 1, arbitrary: fc.constantFrom('%ff', '%00', 'a'.repeat(101), '..', '%2e%2e%2f') },
    );
    const queryValue = fc.oneof(
      fc.constantFrom(
        '1',
        '20',
        '100',
        '0',
        '-1',
        '101',
        'PAID',
        'INVOICE',
        'unmatched',
        encode('d:1'),
        encode('e:1'),
        encode('d:9999999999999999999'),
        encode('e:99999999999999999999'),
      ),
      fc.string({ maxLength: 30 }),
    );
    const query = fc.dictionary(fc.constantFrom('limit', 'cursor', 'after', 'status', 'type', 'externalId', 'source', 'x'), queryValue, { maxKeys: 3 });
    const jsonBody = fc.oneof(
      fc.constant(null).map(() => documentBody(own.source)),
      fc.constant(null).map(() => documentBody(own.source)),
      fc
        .record({
          field: fc.constantFrom('type', 'currency', 'totalAmount', 'taxAmount', 'issueDate', 'taxpayer', 'metadata', 'source', 'providerReference'),
          value: fc.jsonValue({ maxDepth: 3 }),
        })
        .map(({ field, value }) => documentBody(own.source, { [field]: value })),
      fc.record(
        { source: fc.oneof(fc.constant(own.source), fc.string()), name: fc.option(fc.string()), expiresAt: fc.option(fc.string()) },
        { requiredKeys: [] },
      ),
      fc.record({ gracePeriodSeconds: fc.oneof(fc.integer(), fc.constant(null), fc.string()) }, { requiredKeys: [] }),
      fc.record({
        eventId: fc.string(),
        eventType: fc.constantFrom('PAYMENT_STATUS', 'OTHER'),
        status: fc.constantFrom('PAID', 'FAILED', 'x'),
        providerReference: fc.constantFrom('FUZZ-REF-1', 'nope'),
      }),
      // Push endpoints: only addresses this machine owns or refuses, so nothing is ever sent elsewhere.
      fc.record(
        {
          url: fc.constantFrom(
            'https://127.0.0.1/hook',
            'http://127.0.0.1:9/hook',
            'https://10.0.0.1/x',
            'https://[::1]/x',
            'https://user:pw@127.0.0.1/x',
            'ftp://127.0.0.1/x',
            'no url',
          ),
          description: fc.option(fc.string({ maxLength: 40 })),
          eventTypes: fc.option(fc.array(fc.constantFrom('document.created', 'document.status_changed', 'x'), { maxLength: 3 })),
          enabled: fc.option(fc.boolean()),
        },
        { requiredKeys: [] },
      ),
      fc.jsonValue({ maxDepth: 4 }),
    );
    const body = fc.oneof(
      { weight: 5, arbitrary: jsonBody.map((value) => Buffer.from(JSON.stringify(value) ?? 'null')) },
      { weight: 1, arbitrary: fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)) },
      { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)) },
      { weight: 1, arbitrary: fc.constant(undefined) },
    );
    // What an HTTP client can put in a header at all: printable ASCII.
    const headerText = (maxLength: number) => fc.string({ unit: 'grapheme-ascii', maxLength });
    /** Mostly the value that gets a request past this check (so later checks are reached), else a broken one or none. */
    const mostly = (good: fc.Arbitrary<string>, broken: fc.Arbitrary<string>) =>
      fc.oneof({ weight: 6, arbitrary: good }, { weight: 2, arbitrary: broken }, { weight: 1, arbitrary: fc.constant(undefined) });
    const headers = fc.record({
      'x-api-key': mostly(fc.constant(own.key), fc.oneof(fc.constantFrom(other.key, revoked.key, 'sk_tax_', 'garbage'), headerText(60))),
      'x-idempotency-key': mostly(fc.oneof(fc.uuid(), fc.constant('fuzz-fixed-key-1')), fc.oneof(fc.constant('short'), headerText(140))),
      authorization: mostly(fc.constant(`Bearer ${TEST_ADMIN_TOKEN}`), fc.constantFrom('Bearer wrong-token-0123456789', 'Basic x', 'Bearer')),
      'content-type': mostly(
        fc.constantFrom('application/json', 'application/json; charset=utf-8'),
        fc.constantFrom('application/json; charset=latin1', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', ''),
      ),
      'content-encoding': fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom('gzip', 'identity', 'deflate') }),
      'x-request-id': fc.option(headerText(140), { nil: undefined }),
      'x-provider-timestamp': mostly(fc.constant('now'), fc.oneof(fc.constant('2020-01-01T00:00:00.000Z'), headerText(30))),
      'x-provider-signature': mostly(
        fc.constant('valid'),
        fc.oneof(fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: 64, maxLength: 64 }), headerText(70)),
      ),
      accept: fc.option(fc.constantFrom('application/json', 'text/html', '*/*'), { nil: undefined }),
    });
    const request = fc.record({
      method: fc.oneof({ weight: 4, arbitrary: fc.constantFrom('GET', 'POST') }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
      template: fc.constantFrom(...templates),
      id,
      query,
      body,
      headers,
      remoteAddress: fc.ipV4(),
      // A third of the requests are what a correct client sends, but with the body drawn as above: they reach
      // the operations (writes, replays, webhook deliveries) rather than stopping at the first header check.
      wellFormed: fc.oneof({ weight: 2, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    });
    const GOOD_HEADERS: Record<string, string> = {
      'x-api-key': own.key,
      authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
      'content-type': 'application/json',
      'x-provider-timestamp': 'now',
      'x-provider-signature': 'valid',
    };
    const documentedMethod = (template: string) => Object.keys(spec.paths[template] ?? { get: {} })[0].toUpperCase();

    let before = await fingerprint();
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const path = r.template.replace(/\{[^}]+\}/g, r.id);
        const search = new URLSearchParams(r.query).toString();
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(r.headers)) if (value !== undefined) headers[name] = value;
        const method = r.wellFormed ? documentedMethod(r.template) : r.method;
        if (r.wellFormed) {
          Object.assign(headers, GOOD_HEADERS, { 'x-idempotency-key': randomUUID() });
          delete headers['content-encoding'];
        }
        // Signed for real when asked to, over the bytes actually sent, so valid deliveries reach the body checks.
        const timestamp = headers['x-provider-timestamp'] === 'now' ? new Date().toISOString() : headers['x-provider-timestamp'];
        if (timestamp !== undefined) headers['x-provider-timestamp'] = timestamp;
        if (headers['x-provider-signature'] === 'valid')
          headers['x-provider-signature'] = signWebhook(TEST_WEBHOOK_SECRET, timestamp ?? '', r.body ?? Buffer.alloc(0));
        const url = search ? `${path}?${search}` : path;
        const options: InjectOptions = { method: method, url, headers, remoteAddress: r.remoteAddress };
        if (r.body !== undefined && method !== 'GET' && method !== 'HEAD') options.payload = r.body;
        const res = await t.app.inject(options);
        const after = await fingerprint();
        const context = `${method} ${url} → ${res.statusCode} ${res.body.slice(0, 300)}`;
        expect([context, res.statusCode < 500]).toEqual([context, true]);
        if (res.statusCode >= 400) {
          refused += 1;
          expect([context, res.headers['content-type']]).toEqual([context, expect.stringMatching(/^application\/problem\+json/)]);
          const requestId = res.headers['x-request-id'];
          expect([context, typeof requestId]).toEqual([context, 'string']);
          // A replayed refusal keeps the requestId of the request that produced it (the README's replay rule).
          if (method !== 'HEAD' && !res.headers['idempotent-replayed']) expect([context, res.json().requestId]).toEqual([context, requestId]);
          const storedRefusal = method === 'POST' && path.startsWith('/api/v1/') && STORED_REFUSALS.has(res.statusCode);
          const changed = tables.filter((name) => before[name] !== after[name] && !(storedRefusal && name === 'idempotency_records'));
          expect([context, changed]).toEqual([context, []]);
        }
        before = after;
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    // The generators must mostly produce refusals, or the property says little about them.
    expect(refused).toBeGreaterThan(RUNS / 2);
  }, 600_000);
});

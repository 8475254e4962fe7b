import fc from 'fast-check';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { SOURCE_PATTERN } from '../../src/common/source.js';
import { ISO_COUNTRIES, ISO_CURRENCIES } from '../../src/documents/reference-data.js';
import { IDEMPOTENCY_KEY_PATTERN, STORED_REFUSALS } from '../../src/idempotency/idempotency.service.js';
import { adminHeaders, uniqueSource } from '../support/factories.js';
import { ROOT } from '../support/processes.js';
import { startTestApp, TEST_ADMIN_TOKEN, TestApp } from '../support/test-app.js';
import { Exchange, mismatch, OpenApiDocument, recordingFetch, schemaArbitrary } from '../support/openapi-document.js';
import type { RunJourney } from '../openapi-client/journey-result.js';

const run = promisify(execFile);
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);
/** The linters print their findings and exit non-zero when there are errors; the findings are what we assert on. */
const output = (command: Promise<{ stdout: string }>) =>
  command.then(
    (r) => r.stdout,
    (error: { stdout?: string }) => error.stdout ?? '',
  );

describe('the OpenAPI document the gateway serves', () => {
  let t: TestApp;
  let baseUrl: string;
  let document: OpenApiDocument;
  let dir: string;
  let documentFile: string;

  beforeAll(async () => {
    // The generator sends a few hundred requests with one key, shrinking included.
    t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '1000000' } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = await t.app.getUrl();
    const served = await fetch(`${baseUrl}/docs/openapi.json`);
    expect(served.status).toBe(200);
    document = (await served.json()) as OpenApiDocument;
    dir = await mkdtemp(join(tmpdir(), 'gateway-openapi-'));
    documentFile = join(dir, 'openapi.json');
    await writeFile(documentFile, JSON.stringify(document));
  });

  afterAll(async () => {
    await t?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('passes Spectral (spectral:oas) with no error, warning, info or hint', async () => {
    const ruleset = join(dir, '.spectral.yaml');
    await writeFile(ruleset, 'extends: ["spectral:oas"]\n');
    const stdout = await output(run(bin('spectral'), ['lint', documentFile, '--ruleset', ruleset, '--format', 'json', '--fail-severity', 'hint', '--quiet']));
    const findings = JSON.parse(stdout) as { code: string; message: string; path: string[] }[];
    expect(findings.map((f) => `${f.code} at ${f.path.join('.')}: ${f.message}`)).toEqual([]);
  });

  it('passes Redocly (recommended) with no error or warning', async () => {
    const stdout = await output(
      run(bin('redocly'), ['lint', documentFile, '--extends', 'recommended', '--format', 'json'], {
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      }),
    );
    const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string }[] };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });

  it('marks as replayable exactly the answers the idempotency service stores: successes and its stored refusals, never a 409 IN_USE', () => {
    type Response = { headers?: Record<string, unknown>; content?: Record<string, { examples?: Record<string, unknown> }> };
    const marked: string[] = [];
    const expected: string[] = [];
    for (const [path, item] of Object.entries(document.paths)) {
      if (!path.startsWith('/api/v1/') || !item.post) continue;
      for (const [status, response] of Object.entries(item.post.responses as Record<string, Response>)) {
        const codes = Object.keys(response.content?.['application/problem+json']?.examples ?? {});
        if (response.headers?.['Idempotent-Replayed']) marked.push(`${path} ${status}`);
        if (status.startsWith('2') || codes.some((code) => STORED_REFUSALS.has(code as never))) expected.push(`${path} ${status}`);
      }
    }
    expect(marked).toEqual(expected);
    // What a reader is told is replayed names the stored refusals, and says a 409 IDEMPOTENCY_KEY_IN_USE is not.
    const { headers } = document.components as { headers?: Record<string, { description: string }> };
    const header = headers!['Idempotent-Replayed'].description;
    for (const code of STORED_REFUSALS) expect(header).toContain(code);
    expect(header).not.toContain('IDEMPOTENCY_KEY_IN_USE');
    const description = (document as unknown as { info: { description: string } }).info.description;
    const [stored, notStored] = /Successes and business refusals \(([^)]*)\) are\s+stored; ([^.]*) are not/.exec(description)!.slice(1);
    expect(stored.match(/[A-Z_]{5,}/g)!.sort()).toEqual([...STORED_REFUSALS].sort());
    expect(notStored).toContain('409 `IDEMPOTENCY_KEY_IN_USE`');
  });

  it('states the rules the server enforces, from the constants its validators use', () => {
    const schemas = document.components.schemas;
    const create = document.paths['/api/v1/documents'].post;
    expect(create.parameters!.find((p) => p.name === 'X-Idempotency-Key')).toMatchObject({
      in: 'header',
      required: true,
      schema: { pattern: IDEMPOTENCY_KEY_PATTERN.source, minLength: 8, maxLength: 128 },
    });
    expect(create.responses['201']).toMatchObject({
      headers: { Location: expect.anything(), 'Idempotent-Replayed': expect.anything(), 'X-Request-Id': expect.anything() },
    });
    expect(schemas.CreateDocumentDto).toMatchObject({
      additionalProperties: false,
      properties: { source: { pattern: SOURCE_PATTERN.source }, providerReference: { minLength: 1, maxLength: 128 }, metadata: { maxProperties: 20 } },
    });
    expect(schemas.TaxpayerDto.additionalProperties).toBe(false);
    expect(new Set(schemas.TaxpayerDto.properties!.country.enum)).toEqual(ISO_COUNTRIES);
    expect(new Set(schemas.CreateDocumentDto.properties!.currency.enum)).toEqual(ISO_CURRENCIES);
    expect(schemas.RotateApiKeyDto).toMatchObject({
      additionalProperties: false,
      properties: { gracePeriodSeconds: { type: 'integer', minimum: 0, maximum: 86400 } },
    });
    for (const [path, limit] of [
      ['/api/v1/documents', 100],
      ['/api/v1/events', 100],
      ['/admin/audit-log', 200],
      ['/admin/webhook-events', 200],
    ] as const) {
      expect(document.paths[path].get.parameters!.find((p) => p.name === 'limit')!.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: limit });
    }
    const webhook = document.paths['/api/webhooks/payments/bank'].post;
    expect(webhook.requestBody!.content['application/json'].schema).toMatchObject({
      additionalProperties: true,
      properties: { eventId: { minLength: 1, maxLength: 255 }, status: { minLength: 1, description: expect.stringContaining('`REFUNDED`') } },
    });
    // A signed delivery that is not UTF-8 JSON is a 415 (hardening.e2e-spec.ts), so the document says so.
    expect(Object.keys(webhook.responses)).toContain('415');
    expect(document.paths['/health/ready'].get.responses['503']).toMatchObject({
      headers: { 'Retry-After': expect.anything() },
      content: { 'application/problem+json': { examples: { SERVICE_UNAVAILABLE: expect.anything() } } },
    });
    expect((document as unknown as { components: { securitySchemes: object } }).components.securitySchemes).toEqual({
      apiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-API-Key' }),
      adminToken: { type: 'http', scheme: 'bearer', description: expect.any(String) },
      adminSession: expect.objectContaining({ type: 'apiKey', in: 'cookie', name: 'tdg_admin_session' }),
    });
    for (const item of Object.values(document.paths)) for (const operation of Object.values(item)) expect(Object.keys(operation.responses)).toContain('500');
  });

  it('documents the problem titles and codes the server sends, and no example names a path other than its own', async () => {
    const key = (await t.app.inject({ method: 'POST', url: '/admin/api-keys', headers: adminHeaders, payload: { source: uniqueSource('titles') } })).json()
      .key as string;
    const asClient = { 'X-API-Key': key, 'Content-Type': 'application/json', 'X-Idempotency-Key': 'titles-0001' };
    const sent = await Promise.all(
      [
        fetch(`${baseUrl}/api/v1/documents`, { method: 'POST', headers: { ...asClient, 'X-API-Key': 'sk_tax_nope' }, body: '{}' }),
        fetch(`${baseUrl}/api/v1/documents/00000000-0000-4000-8000-000000000000`, { headers: asClient }),
        fetch(`${baseUrl}/api/v1/documents`, { method: 'POST', headers: asClient, body: '{"source":' }),
        fetch(`${baseUrl}/api/v1/documents`, { method: 'POST', headers: { ...asClient, 'Content-Type': 'text/plain' }, body: 'x' }),
        fetch(`${baseUrl}/api/v1/documents`, { method: 'POST', headers: asClient, body: JSON.stringify({ padding: 'x'.repeat(1_100_000) }) }),
      ].map(async (answer) => (await answer).json() as Promise<{ status: number; title: string; code: string }>),
    );
    expect(sent.map((problem) => problem.status)).toEqual([401, 404, 422, 415, 413]);
    const titleSent = new Map(sent.map((problem) => [problem.status, problem.title]));
    const codesDocumented = new Set<string>();
    for (const [path, item] of Object.entries(document.paths)) {
      for (const operation of Object.values(item)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          for (const example of Object.values(response.content?.['application/problem+json']?.examples ?? {})) {
            expect(example.value).toMatchObject({
              status: Number(status),
              instance: expect.stringMatching(new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`)),
            });
            if (titleSent.has(Number(status))) expect(example.value.title).toBe(titleSent.get(Number(status)));
            codesDocumented.add(example.value.code);
          }
        }
      }
    }
    for (const problem of sent) expect(codesDocumented).toContain(problem.code);
  });

  it('shows, as its 422 examples, what the server answers', async () => {
    const key = (await t.app.inject({ method: 'POST', url: '/admin/api-keys', headers: adminHeaders, payload: { source: uniqueSource('examples') } })).json()
      .key as string;
    const cases: Array<{ path: string; method: string; url?: string; init: RequestInit }> = [
      { path: '/api/v1/documents', method: 'post', init: { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: '{}' } },
      { path: '/api/v1/documents', method: 'get', url: '/api/v1/documents?sort=newest', init: { headers: { 'X-API-Key': key } } },
      { path: '/api/v1/documents/{id}', method: 'get', url: '/api/v1/documents/%00', init: { headers: { 'X-API-Key': key } } },
      {
        path: '/admin/api-keys',
        method: 'post',
        init: { method: 'POST', headers: { ...adminHeaders, 'Content-Type': 'application/json' }, body: '{"source":' },
      },
    ];
    for (const { path, method, url, init } of cases) {
      const answer = (await (await fetch(`${baseUrl}${url ?? path}`, init)).json()) as Record<string, unknown>;
      const example = document.paths[path][method].responses['422'].content!['application/problem+json'].examples!.VALIDATION_ERROR.value;
      expect({ path, detail: answer.detail, errors: answer.errors }).toEqual({ path, detail: example.detail, errors: example.errors });
    }
  });

  it('shows, as its 401 examples, what the server answers, and names every admin credential the server takes', async () => {
    const cases: Array<{ path: string; method: string; headers: Record<string, string> }> = [
      { path: '/api/v1/documents', method: 'get', headers: { 'X-API-Key': 'sk_tax_nope' } },
      { path: '/admin/api-keys', method: 'get', headers: {} },
      { path: '/admin/api-keys', method: 'get', headers: { Authorization: 'Bearer adm_tax_nope' } },
    ];
    for (const { path, method, headers } of cases) {
      const answer = await fetch(`${baseUrl}${path}`, { headers });
      const example = document.paths[path][method].responses['401'].content!['application/problem+json'].examples!.UNAUTHORIZED.value;
      expect({ path, status: answer.status, detail: ((await answer.json()) as { detail: string }).detail }).toEqual({
        path,
        status: 401,
        detail: example.detail,
      });
    }
    // Personal tokens, the break-glass token and the console's session, wherever the admin credential is described.
    const admin = document.paths['/admin/api-keys'].get.responses['401'].content!['application/problem+json'].examples!.UNAUTHORIZED.value.detail;
    const described = document as unknown as {
      info: { description: string };
      tags: { name: string; description: string }[];
      components: { securitySchemes: Record<string, { description: string }> };
    };
    for (const text of [
      admin,
      described.info.description,
      described.tags.find((tag) => tag.name === 'admin')!.description,
      described.components.securitySchemes.adminToken.description,
    ]) {
      expect(text).toContain('adm_tax_…');
      expect(text).toContain('ADMIN_TOKEN');
    }
    for (const text of [admin, described.info.description, described.tags.find((tag) => tag.name === 'admin')!.description]) expect(text).toMatch(/session/);
  });

  it('drives the whole journey through a client generated from it, with no hand-written types', async () => {
    const generated = join(ROOT, 'test', 'openapi-client', 'generated');
    await mkdir(generated, { recursive: true });
    await run(process.execPath, [join(ROOT, 'node_modules', 'openapi-typescript', 'bin', 'cli.js'), documentFile, '--output', join(generated, 'openapi.d.ts')]);
    // A schema that does not fit what the journey reads and sends fails here, before anything runs.
    const journeyFile = join(ROOT, 'test', 'openapi-client', 'journey.ts');
    const typeCheck = await output(
      run(process.execPath, [
        join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
        '--ignoreConfig',
        '--noEmit',
        '--strict',
        '--skipLibCheck',
        '--module',
        'node16',
        '--target',
        'ES2022',
        '--lib',
        'ES2022,DOM',
        journeyFile,
      ]),
    );
    expect(typeCheck).toBe('');

    // Loaded only now: its types did not exist before this test generated them.
    const journey: string = '../openapi-client/journey.js';
    const { runJourney } = (await import(journey)) as { runJourney: RunJourney };
    const source = uniqueSource('gen');
    const exchanges: Exchange[] = [];
    const result = await runJourney(baseUrl, TEST_ADMIN_TOKEN, source, recordingFetch(exchanges));
    // And at run time, every answer fits the document: its status, media type and body schema.
    expect(exchanges.map((exchange) => `${exchange.method} ${exchange.path} ${exchange.status}`)).toHaveLength(7);
    expect(exchanges.map((exchange) => mismatch(document, exchange)).filter(Boolean)).toEqual([]);
    expect(result.source).toBe(source);
    expect(result.created).toMatchObject({ status: 201, location: `/api/v1/documents/${result.created.id}`, replayed: null });
    expect(result.replay).toEqual({ ...result.created, replayed: 'true' });
    expect(result.listedIds).toEqual([result.created.id]);
    expect(result.feed).toMatchObject({ types: ['document.created'], documentIds: [result.created.id], hasMore: false });
    expect(result.feed.nextCursor).toEqual(expect.any(String));
    expect(result.missing).toEqual({ status: 404, code: 'NOT_FOUND' });
  });

  it('lets a request generator that knows only the document and an API key create documents and replay them', async () => {
    const issued = await t.app.inject({ method: 'POST', url: '/admin/api-keys', headers: adminHeaders, payload: { source: uniqueSource('fuzz') } });
    const key = issued.json().key as string;
    const operation = document.paths['/api/v1/documents'].post;
    const idempotencyKey = operation.parameters!.find((p) => p.name === 'X-Idempotency-Key')!;
    const bodySchema = operation.requestBody!.content['application/json'].schema;
    // The one value the schema cannot carry: `source` must be the key's own, which GET /api/v1/me tells.
    const me = (await (await fetch(`${baseUrl}/api/v1/me`, { headers: { 'X-API-Key': key } })).json()) as { source: string };

    const RUNS = 60;
    const tally = { created: 0, replayed: 0, duplicates: 0, refusedFor: new Set<string>() };
    const usedKeys = new Set<unknown>();
    await fc.assert(
      fc.asyncProperty(schemaArbitrary(document, idempotencyKey.schema), schemaArbitrary(document, bodySchema), async (idempotency, generated) => {
        // The help the generator gets: a fresh idempotency key per request (generated from its pattern).
        fc.pre(!usedKeys.has(idempotency));
        usedKeys.add(idempotency);
        const body = JSON.stringify({ ...(generated as object), source: me.source });
        const send = async () => {
          const exchanges: Exchange[] = [];
          const request = new Request(`${baseUrl}/api/v1/documents`, {
            method: 'POST',
            headers: { 'X-API-Key': key, 'X-Idempotency-Key': idempotency as string, 'Content-Type': 'application/json' },
            body,
          });
          const response = await recordingFetch(exchanges)(request);
          expect(mismatch(document, exchanges[0])).toBeNull();
          return response;
        };
        const first = await send();
        const answer = (await first.json()) as { id?: string; code?: string; errors?: { field: string }[] };
        if (first.status === 201) {
          tally.created += 1;
          const again = await send();
          expect(again.status).toBe(201);
          expect(again.headers.get('idempotent-replayed')).toBe('true');
          expect(((await again.json()) as { id: string }).id).toBe(answer.id);
          tally.replayed += 1;
          return;
        }
        // Generated values repeat (short strings): externalId and providerReference are unique, as documented.
        if (first.status === 409) {
          expect(answer.code).toBe('DUPLICATE_DOCUMENT');
          tally.duplicates += 1;
          return;
        }
        // Only the rules JSON Schema cannot state (they are in the descriptions) may refuse a schema-valid body.
        expect(first.status).toBe(422);
        for (const { field } of answer.errors ?? []) {
          expect(field).toMatch(/^(taxAmount|metadata(\..*)?)$/);
          tally.refusedFor.add(field.split('.')[0]);
        }
      }),
      { numRuns: RUNS },
    );
    expect(tally.created).toBeGreaterThan(10);
    expect(tally.replayed).toBe(tally.created);
    process.stdout.write(
      `schema-driven generator: ${tally.created} of ${RUNS} created and replayed, ${tally.duplicates} duplicates; 422 only for ${[...tally.refusedFor].join(', ') || 'nothing'}\n`,
    );
  });
});

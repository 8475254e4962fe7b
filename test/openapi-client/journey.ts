/**
 * An integrator's whole journey through a client generated from the served OpenAPI document
 * (openapi-typescript + openapi-fetch), with no hand-written types: the generated `paths` type is all
 * this file knows about the API. The e2e test type-checks it against freshly generated types, then runs it.
 */
import createClient from 'openapi-fetch';
import type { paths } from './generated/openapi.js';
import type { JourneyResult } from './journey-result.js';

export async function runJourney(baseUrl: string, adminToken: string, source: string, fetch?: (request: Request) => Promise<Response>): Promise<JourneyResult> {
  const admin = createClient<paths>({ baseUrl, fetch, headers: { Authorization: `Bearer ${adminToken}` } });
  const issued = await admin.POST('/admin/api-keys', { body: { source, name: 'generated client' } });
  if (!issued.data) throw new Error(`issuing a key failed: ${issued.response.status}`);

  const client = createClient<paths>({ baseUrl, fetch, headers: { 'X-API-Key': issued.data.key } });
  const me = await client.GET('/api/v1/me');
  if (!me.data) throw new Error(`GET /api/v1/me failed: ${me.response.status}`);

  const idempotencyKey = `journey-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const body = {
    source: me.data.source,
    externalId: `INV-${idempotencyKey}`,
    type: 'INVOICE' as const,
    taxpayer: { taxId: 'DE123456789', name: 'Muster GmbH', country: 'DE' as const },
    issueDate: '2026-11-20',
    currency: 'EUR' as const,
    totalAmount: '119.00',
    taxAmount: '19.00',
    metadata: { costCenter: 'CC-42' },
  };
  const create = () => client.POST('/api/v1/documents', { params: { header: { 'X-Idempotency-Key': idempotencyKey } }, body });
  const first = await create();
  const again = await create();
  if (!first.data || !again.data) throw new Error(`creating failed: ${first.response.status} / ${again.response.status}`);

  const list = await client.GET('/api/v1/documents', { params: { query: { limit: 10, type: 'INVOICE' } } });
  // The feed shows an event once every older writing transaction on the server has ended, whatever its database.
  let feed = await client.GET('/api/v1/events', { params: { query: { limit: 100 } } });
  for (const deadline = Date.now() + 45_000; feed.data?.data.length === 0 && Date.now() < deadline;) {
    await new Promise((r) => setTimeout(r, 100));
    feed = await client.GET('/api/v1/events', { params: { query: { limit: 100 } } });
  }
  if (!list.data || !feed.data) throw new Error(`reading failed: ${list.response.status} / ${feed.response.status}`);

  const missing = await client.GET('/api/v1/documents/{id}', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } } });
  if (!missing.error) throw new Error('an unknown document was found');

  const outcome = (result: typeof first, id: string) => ({
    status: result.response.status,
    location: result.response.headers.get('Location'),
    replayed: result.response.headers.get('Idempotent-Replayed'),
    id,
  });
  return {
    source: me.data.source,
    created: outcome(first, first.data.id),
    replay: outcome(again, again.data.id),
    listedIds: list.data.data.map((document) => document.id),
    feed: {
      types: feed.data.data.map((event) => event.type),
      documentIds: feed.data.data.map((event) => event.documentId),
      nextCursor: feed.data.nextCursor,
      hasMore: feed.data.hasMore,
    },
    missing: { status: missing.response.status, code: missing.error.code },
  };
}

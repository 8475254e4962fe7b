/**
 * A whole integration: submit a document, follow the event feed from a stored cursor, and receive
 * push notifications, verified. Runs until Ctrl-C; the next run resumes where this one stopped.
 *
 *   TAX_GATEWAY_URL=http://localhost:3000 TAX_GATEWAY_API_KEY=sk_tax_… npm run example
 */
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GatewayClient, GatewayProblemError, GatewayWebhookVerificationError, verifyWebhook } from '@tax-document-gateway/client';

const gatewayUrl = process.env.TAX_GATEWAY_URL ?? 'http://localhost:3000';
const apiKey = process.env.TAX_GATEWAY_API_KEY ?? '';
const pushPort = Number(process.env.PUSH_PORT ?? 4000);
const stateFile = process.env.STATE_FILE ?? 'tax-gateway-state.json';

/** What must survive a restart. Keep the secret in your secret store, the cursor in your database. */
interface State {
  cursor?: string;
  endpoint?: { id: string; secret: string };
}

const gateway = new GatewayClient({
  baseUrl: gatewayUrl,
  apiKey,
  onRetry: ({ method, path, attempt, delayMs, error }) => console.warn(`${method} ${path}: attempt ${attempt} failed (${error.message}), retrying in ${delayMs} ms`),
});

async function main(): Promise<void> {
  const state: State = await readFile(stateFile, 'utf8').then(JSON.parse, () => ({}));
  const save = () => writeFile(stateFile, JSON.stringify(state, null, 2));
  const me = await gateway.me();
  console.log(`connected as ${me.source}`);

  // 1. Receive pushes: verify each against the raw body, answer 2xx fast, de-duplicate on webhook-id.
  const handled = new Set<string>(); // in production: a unique key in your database
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (!state.endpoint) return response.writeHead(503).end(); // not registered yet: the gateway retries
      try {
        const message = verifyWebhook(request.headers, Buffer.concat(chunks), state.endpoint.secret);
        if (!handled.has(message.data.id)) {
          handled.add(message.data.id);
          console.log(`push ${message.type} ${message.data.documentId} ${message.data.status}`);
        }
        response.writeHead(204).end();
      } catch (error) {
        if (!(error instanceof GatewayWebhookVerificationError)) throw error;
        console.warn(`refused a push: ${error.message}`);
        response.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => receiver.listen(pushPort, '127.0.0.1', resolve));
  const pushUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/tax-gateway`;

  // 2. Register the receiver once (the secret is shown only now), or point the stored endpoint at it again.
  state.endpoint = await registerEndpoint(pushUrl, state.endpoint);
  await save();

  // 3. Submit a document. The client makes an idempotency key and resends it on every retry, so a lost
  //    answer never creates a second document. To stay exactly-once across a crash of this process
  //    too, pass { idempotencyKey } derived from your own record, e.g. `acme-${invoice.number}`.
  const externalId = `INV-${Date.now()}`;
  const document = await gateway.documents.create({
    source: me.source,
    externalId,
    type: 'INVOICE',
    taxpayer: { taxId: 'DE123456789', name: 'Muster GmbH', country: 'DE' },
    issueDate: '2026-11-20',
    currency: 'EUR',
    totalAmount: '119.00',
    taxAmount: '19.00',
  });
  console.log(`created ${document.id} ${externalId} ${document.status}`);

  // 4. Follow the feed from the stored cursor until Ctrl-C. onCursor runs once every event before the
  //    new cursor has been handled: the moment to store it.
  const stop = new AbortController();
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  const feed = gateway.events.follow({
    after: state.cursor,
    signal: stop.signal,
    onCursor: async (cursor) => {
      state.cursor = cursor;
      await save();
    },
  });
  for await (const event of feed) {
    console.log(`feed ${event.type} ${event.documentId} ${event.status}`);
  }
  receiver.closeAllConnections();
  receiver.close();
  console.log(`stopped; resuming after ${feed.cursor ?? 'the start of the feed'}`);
}

async function registerEndpoint(url: string, stored: State['endpoint']): Promise<NonNullable<State['endpoint']>> {
  if (stored) {
    try {
      await gateway.webhookEndpoints.update(stored.id, { url, enabled: true });
      return stored;
    } catch (error) {
      if (!(error instanceof GatewayProblemError && error.code === 'NOT_FOUND')) throw error;
    }
  }
  const endpoint = await gateway.webhookEndpoints.create({ url, description: 'integration example' });
  return { id: endpoint.id, secret: endpoint.secret };
}

main().catch((error: unknown) => {
  console.error(error instanceof GatewayProblemError ? `${error.message} (request ${error.requestId})` : error);
  process.exit(1);
});

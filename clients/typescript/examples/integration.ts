/**
 * A whole integration: submit a document, follow the event feed from a stored cursor, and receive
 * push notifications, verified. Runs until Ctrl-C; the next run resumes the feed where this one stopped.
 *
 *   TAX_GATEWAY_URL=http://localhost:3000 TAX_GATEWAY_API_KEY=sk_tax_… npm run example
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GatewayClient, GatewayProblemError, verifyWebhook } from '@tax-document-gateway/client';

const gatewayUrl = process.env.TAX_GATEWAY_URL ?? 'http://localhost:3000';
const apiKey = process.env.TAX_GATEWAY_API_KEY ?? '';
// Not 4000, where the receiver of docs/push-notifications-locally.md listens.
const pushPort = Number(process.env.PUSH_PORT ?? 4100);
const stateFile = process.env.STATE_FILE ?? 'tax-gateway-state.json';

/** What must survive a restart. Keep the cursor in your database. */
interface State {
  cursor?: string;
  /** This run's push endpoint while it exists: one a killed run left behind is deleted by the next. */
  endpointId?: string;
}

const gateway = new GatewayClient({
  baseUrl: gatewayUrl,
  apiKey,
  onRetry: ({ method, path, attempt, delayMs, error }) => console.warn(`${method} ${path}: attempt ${attempt} failed (${error.message}), retrying in ${delayMs} ms`),
});

// Ctrl-C ends the run at whatever step it is in, through main()'s `finally`; a second Ctrl-C quits at once.
const stop = new AbortController();
process.once('SIGINT', () => stop.abort());
process.once('SIGTERM', () => stop.abort());
const { signal } = stop;

async function main(): Promise<void> {
  const state: State = await readFile(stateFile, 'utf8').then(JSON.parse, () => ({}));
  // Written whole, then renamed over the old state: a run killed mid-save leaves the previous state,
  // never a truncated file that would lose the endpoint it names.
  const save = async () => {
    await writeFile(`${stateFile}.tmp`, JSON.stringify(state, null, 2));
    await rename(`${stateFile}.tmp`, stateFile);
  };
  const me = await gateway.me({ signal });
  console.log(`connected as ${me.source}`);

  // 1. Receive pushes: verify each against the raw body, answer 2xx fast, de-duplicate on webhook-id.
  let secret: string | undefined;
  const handled = new Set<string>(); // in production: a unique key in your database
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (!secret) return response.writeHead(503).end(); // not registered yet: the gateway retries
      try {
        const message = verifyWebhook(request.headers, Buffer.concat(chunks), secret);
        if (!handled.has(message.data.id)) {
          handled.add(message.data.id);
          console.log(`push ${message.type} ${message.data.documentId} ${message.data.status}`);
        }
        response.writeHead(204).end();
      } catch (error) {
        // Why, never the secret or the signature: "No matching signature found" is a message signed for
        // another endpoint (another secret), "timestamp too old" a clock or a long-delayed retry.
        console.warn(`refused a push: ${error instanceof Error ? error.message : String(error)}`);
        response.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => receiver.listen(pushPort, '127.0.0.1', resolve));
  const pushUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/tax-gateway`;

  try {
    // 2. Register the receiver; the secret is in this answer only. This endpoint lives as long as the run:
    //    left behind, it would be pushed to, and retried for about 3 days, with nobody listening. An
    //    application registers its public URL once and keeps the endpoint and its secret. Not aborted by
    //    Ctrl-C: an endpoint created by a call cut short would be one this run cannot delete.
    await removeEndpoint(state, save);
    const endpoint = await gateway.webhookEndpoints.create({ url: pushUrl, description: 'integration example' });
    secret = endpoint.secret;
    state.endpointId = endpoint.id;
    await save();
    console.log(`registered push endpoint ${endpoint.id} at ${pushUrl}`);

    // 3. Submit a document. The client makes an idempotency key and resends it on every retry, so a lost
    //    answer never creates a second document. To stay exactly-once across a crash of this process
    //    too, pass { idempotencyKey } derived from your own record, e.g. `acme-${invoice.number}`.
    const externalId = `INV-${Date.now()}`;
    const document = await gateway.documents.create(
      {
        source: me.source,
        externalId,
        type: 'INVOICE',
        taxpayer: { taxId: 'DE123456789', name: 'Muster GmbH', country: 'DE' },
        issueDate: '2026-11-20',
        currency: 'EUR',
        totalAmount: '119.00',
        taxAmount: '19.00',
      },
      { signal },
    );
    console.log(`created ${document.id} ${externalId} ${document.status}`);

    // 4. Follow the feed from the stored cursor until Ctrl-C. onCursor runs once every event before the
    //    new cursor has been handled: the moment to store it.
    const feed = gateway.events.follow({
      after: state.cursor,
      signal,
      onCursor: async (cursor) => {
        state.cursor = cursor;
        await save();
      },
    });
    for await (const event of feed) {
      console.log(`feed ${event.type} ${event.documentId} ${event.status}`);
    }
    console.log(`stopped; resuming after ${feed.cursor ?? 'the start of the feed'}`);
  } finally {
    // Also after an error or a Ctrl-C midway.
    await removeEndpoint(state, save);
    receiver.closeAllConnections();
    receiver.close();
  }
}

/** Deletes the endpoint the state names; if that fails, the state keeps it for the next run to delete. */
async function removeEndpoint(state: State, save: () => Promise<void>): Promise<void> {
  const id = state.endpointId;
  if (!id) return;
  try {
    await gateway.webhookEndpoints.delete(id);
  } catch (error) {
    if (!(error instanceof GatewayProblemError && error.code === 'NOT_FOUND')) {
      console.error(`could not delete push endpoint ${id} (${error instanceof Error ? error.message : String(error)}); the next run deletes it`);
      return;
    }
  }
  delete state.endpointId;
  await save();
  console.log(`deleted push endpoint ${id}`);
}

main().catch((error: unknown) => {
  if (error === signal.reason) return console.log('stopped');
  console.error(error instanceof GatewayProblemError ? `${error.message} (request ${error.requestId})` : error);
  process.exit(1);
});

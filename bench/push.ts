/**
 * The push scenario of `npm run bench`: what delivering events costs the create path, and how fast they
 * arrive. Each round creates PUSH_DOCUMENTS documents at full speed three times:
 *   1. with the feed trigger disabled: the create path as if deliveries were found later by a
 *      dispatcher reading the feed behind a cursor (that alternative adds nothing to a create);
 *   2. with the trigger, for a source without endpoints;
 *   3. with the trigger, for a source with one endpoint, a receiver on loopback answering in 5 ms;
 * and reports creates/s, when the last event arrived after the last create, and the delay from each
 * create's answer (just after its commit) to the first attempt, under that load and on an idle gateway.
 */
import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { Client } from 'pg';
import { documentBody } from '../test/support/factories.js';

const DOCUMENTS = Number(process.env.PUSH_DOCUMENTS ?? 1000);
const ROUNDS = Number(process.env.PUSH_ROUNDS ?? 3);
const IDLE_SAMPLES = 50;

type Issue = (source: string) => Promise<string>;

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
};

/**
 * A receiver that answers 204 after 5 ms and notes when each document's first message arrived. It runs
 * on a thread of its own, so that answering 1,000 messages does not slow autocannon's event loop, which
 * would count against the creates.
 */
export async function startReceiver() {
  const firstSeen = new Map<string, number>();
  const worker = new Worker(
    `const { createServer } = require('node:http');
     const { parentPort } = require('node:worker_threads');
     const server = createServer((request, response) => {
       const chunks = [];
       request.on('data', (c) => chunks.push(c));
       request.on('end', () => {
         parentPort.postMessage({ documentId: JSON.parse(Buffer.concat(chunks).toString('utf8')).data.documentId, at: performance.timeOrigin + performance.now() });
         setTimeout(() => response.writeHead(204).end(), 5);
       });
     });
     server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));`,
    { eval: true },
  );
  const port = await new Promise<number>((resolve) => worker.once('message', (m: { port: number }) => resolve(m.port)));
  worker.on('message', ({ documentId, at }: { documentId: string; at: number }) => {
    if (!firstSeen.has(documentId)) firstSeen.set(documentId, at - performance.timeOrigin);
  });
  return { url: `http://127.0.0.1:${port}/hooks`, firstSeen, close: () => worker.terminate() };
}

export async function runPushScenario(url: string, databaseUrl: string, connections: number, issue: Issue): Promise<void> {
  const receiver = await startReceiver();
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  const plain = { source: `push-none-${Date.now()}`, key: '' };
  const pushed = { source: `push-one-${Date.now()}`, key: '' };
  plain.key = await issue(plain.source);
  pushed.key = await issue(pushed.source);
  const registered = await fetch(`${url}/api/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { 'x-api-key': pushed.key, 'content-type': 'application/json', 'x-idempotency-key': randomUUID() },
    body: JSON.stringify({ url: receiver.url, eventTypes: ['document.created'] }),
  });
  if (registered.status !== 201) throw new Error(`registering the push endpoint failed: ${registered.status}`);

  const answeredAt = new Map<string, number>();
  const create = async (target: { source: string; key: string }) => {
    const started = performance.now();
    let lastAnswer = started;
    const result = await autocannon({
      url: `${url}/api/v1/documents`,
      connections,
      amount: DOCUMENTS,
      requests: [
        {
          method: 'POST',
          setupRequest: (req) => ({
            ...req,
            headers: { 'x-api-key': target.key, 'content-type': 'application/json', 'x-idempotency-key': randomUUID() },
            body: JSON.stringify(documentBody(target.source, { externalId: randomUUID() })),
          }),
          onResponse: (status, body) => {
            lastAnswer = performance.now();
            if (status === 201) answeredAt.set((JSON.parse(body) as { id: string }).id, performance.now());
          },
        },
      ],
    });
    // From the first request to the last answer: autocannon's own figures count whole seconds (its average
    // per second, and it returns on the next one-second tick), too coarse for a run of a few seconds.
    return { rps: (result.requests.total / (lastAnswer - started)) * 1000, lastAnswer, non2xx: result.non2xx };
  };
  const setTrigger = (enabled: boolean) =>
    db.query(`ALTER TABLE document_events ${enabled ? 'ENABLE' : 'DISABLE'} TRIGGER trg_document_events_outbound_deliveries`);

  const rows: string[] = [];
  const ratios: Array<{ none: number; one: number; oneToNone: number }> = [];
  try {
    for (let round = 1; round <= ROUNDS; round += 1) {
      // The three runs in a different order each round, so a trend in the machine's load favours none of them.
      const phases = ['without', 'none', 'one'] as const;
      const order = round % 2 ? phases : [...phases].reverse();
      const results: Partial<Record<(typeof phases)[number], Awaited<ReturnType<typeof create>>>> = {};
      let delivery = '';
      for (const phase of order) {
        await setTrigger(phase !== 'without');
        if (phase !== 'one') {
          results[phase] = await create(plain);
          continue;
        }
        answeredAt.clear();
        receiver.firstSeen.clear();
        results.one = await create(pushed);
        const created = [...answeredAt.keys()];
        const deadline = performance.now() + 120_000;
        while (created.some((id) => !receiver.firstSeen.has(id)) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        const delivered = created.filter((id) => receiver.firstSeen.has(id));
        const lastArrival = Math.max(...delivered.map((id) => receiver.firstSeen.get(id)!));
        const delays = delivered.map((id) => receiver.firstSeen.get(id)! - answeredAt.get(id)!);
        delivery = `${delivered.length}/${created.length} | ${((lastArrival - results.one.lastAnswer) / 1000).toFixed(2)} | ${percentile(delays, 50).toFixed(0)} | ${percentile(delays, 99).toFixed(0)}`;
      }
      const { without, none, one } = results as Required<typeof results>;
      ratios.push({ none: none.rps / without.rps, one: one.rps / without.rps, oneToNone: one.rps / none.rps });
      rows.push(
        `| ${round} | ${without.rps.toFixed(0)} | ${none.rps.toFixed(0)} (${(none.rps / without.rps).toFixed(2)}×) | ${one.rps.toFixed(0)} (${(one.rps / without.rps).toFixed(2)}×) | ` +
          `${delivery} | ${without.non2xx + none.non2xx + one.non2xx} |`,
      );
      process.stderr.write(`push round ${round}: ${rows.at(-1)}\n`);
    }
    await setTrigger(true);
    const idle = await idleLatencies(url, pushed, receiver.firstSeen);
    process.stdout.write(`\nPush notifications: ${DOCUMENTS} documents at full speed per column, ${connections} connections, receiver answering in 5 ms\n\n`);
    process.stdout.write(
      '| round | creates/s, no trigger | creates/s, trigger, no endpoint | creates/s, one endpoint | delivered | last arrival after last create, s | first attempt p50 ms | p99 ms | non-2xx |\n' +
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|\n',
    );
    process.stdout.write(`${rows.join('\n')}\n`);
    process.stdout.write(
      `\nMedian over the rounds, creates/s against no trigger: trigger without endpoint ${percentile(
        ratios.map((r) => r.none),
        50,
      ).toFixed(2)}×, ` +
        `with one endpoint ${percentile(
          ratios.map((r) => r.one),
          50,
        ).toFixed(2)}×; one endpoint against the trigger without endpoint ` +
        `${percentile(
          ratios.map((r) => r.oneToNone),
          50,
        ).toFixed(2)}× (rounds: ${ratios.map((r) => r.oneToNone.toFixed(2)).join(', ')})\n`,
    );
    process.stdout.write(
      `\nIdle gateway, ${IDLE_SAMPLES} creates one at a time: first attempt p50 ${percentile(idle, 50).toFixed(1)} ms, p99 ${percentile(idle, 99).toFixed(1)} ms after the create's answer\n`,
    );
  } finally {
    await setTrigger(true);
    await db.end();
    await receiver.close();
  }
}

async function idleLatencies(url: string, target: { source: string; key: string }, firstSeen: Map<string, number>): Promise<number[]> {
  const delays: number[] = [];
  for (let i = 0; i < IDLE_SAMPLES; i += 1) {
    const res = await fetch(`${url}/api/v1/documents`, {
      method: 'POST',
      headers: { 'x-api-key': target.key, 'content-type': 'application/json', 'x-idempotency-key': randomUUID() },
      body: JSON.stringify(documentBody(target.source, { externalId: randomUUID() })),
    });
    const answered = performance.now();
    const { id } = (await res.json()) as { id: string };
    const deadline = performance.now() + 30_000;
    while (!firstSeen.has(id) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 1));
    delays.push((firstSeen.get(id) ?? Infinity) - answered);
    await new Promise((r) => setTimeout(r, 50));
  }
  return delays;
}

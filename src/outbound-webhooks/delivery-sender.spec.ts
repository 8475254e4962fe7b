import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { DeliverySender } from './delivery-sender.js';

describe('DeliverySender', () => {
  let server: Server;
  let url: string;
  let answer: (request: IncomingMessage, response: ServerResponse) => void;
  const hanging = new Set<ServerResponse>();

  beforeAll(async () => {
    server = createServer((request, response) => request.resume().on('end', () => answer(request, response)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterEach(() => {
    for (const response of hanging) response.destroy();
    hanging.clear();
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const hang = (_request: IncomingMessage, response: ServerResponse) => hanging.add(response);
  const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
  const newSender = (timeoutMs = 5000) => new DeliverySender({ timeoutMs, connectionsPerEndpoint: 4, allowPrivate: true });

  it('reports the status and a short excerpt of the answer, and leaves no timer behind', async () => {
    answer = (_request, response) => response.writeHead(200, { 'content-type': 'text/plain' }).end(`ok\n${'x'.repeat(10_000)}`);
    const sender = newSender();
    const before = timers();
    const results = await Promise.all(Array.from({ length: 50 }, () => sender.send(url, { 'content-type': 'application/json' }, '{}')));
    expect(results.every((r) => r.ok && r.status === 200 && r.error === null)).toBe(true);
    expect(results[0].excerpt).toBe(`ok ${'x'.repeat(253)}`);
    // Each attempt's timeout timer is cleared when it ends, not left to fire.
    expect(timers()).toBeLessThanOrEqual(before);
    await sender.close();
  });

  it('gives up on a receiver that does not answer in time: a timeout', async () => {
    answer = hang;
    const sender = newSender(300);
    const result = await sender.send(url, {}, '{}');
    expect(result).toMatchObject({ ok: false, status: null, error: 'timeout' });
    await sender.close();
  });

  it('bounds the whole attempt, not only the waits between bytes: an answer trickled byte by byte times out', async () => {
    // Each byte comes well within the pool's idle timeouts (300 ms); only the attempt's own timer ends it.
    answer = (_request, response) => {
      hanging.add(response);
      response.writeHead(200, { 'content-type': 'text/plain' });
      const drip = setInterval(() => (response.destroyed ? clearInterval(drip) : response.write('x')), 100);
    };
    const sender = newSender(300);
    const started = performance.now();
    const result = await sender.send(url, {}, '{}');
    expect(result).toMatchObject({ ok: false, status: null, error: 'timeout' });
    // Without the attempt's own timer the answer would trickle on for ever; the bound leaves room for a busy machine.
    expect(performance.now() - started).toBeLessThan(10_000);
    await sender.close();
  });

  it('aborts attempts in flight on close, reported as shutdown, and refuses new ones', async () => {
    answer = hang;
    const sender = newSender(60_000);
    const inFlight = sender.send(url, {}, '{}');
    await new Promise((resolve) => setTimeout(resolve, 100));
    await sender.close();
    expect(await inFlight).toMatchObject({ ok: false, error: 'shutdown' });
    expect(await sender.send(url, {}, '{}')).toMatchObject({ ok: false, error: 'shutdown' });
  });
});

import { createServer, IncomingHttpHeaders, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

export interface ReceivedMessage {
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

/** Decides the answer to one message; `hang` never answers (the sender's timeout must end it). */
export type Responder = (
  message: ReceivedMessage,
  index: number,
) => { status: number; headers?: Record<string, string>; body?: string; delayMs?: number } | 'hang';

/** A real HTTP receiver on loopback that records every message a gateway pushes to it. */
export class WebhookReceiver {
  readonly messages: ReceivedMessage[] = [];
  private readonly hanging = new Set<ServerResponse>();
  private server!: Server;
  url = '';

  constructor(public respond: Responder = () => ({ status: 204 })) {}

  async start(path = '/hooks'): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const message = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), receivedAt: Date.now() };
        this.messages.push(message);
        const answer = this.respond(message, this.messages.length - 1);
        if (answer === 'hang') {
          this.hanging.add(response);
          return;
        }
        setTimeout(() => {
          response.writeHead(answer.status, answer.headers ?? {});
          response.end(answer.body ?? '');
        }, answer.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
    return this;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The messages carrying this `webhook-id`, i.e. every attempt of one event to this receiver. */
  attemptsOf(eventId: string): ReceivedMessage[] {
    return this.messages.filter((m) => m.headers['webhook-id'] === eventId);
  }

  async stop(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

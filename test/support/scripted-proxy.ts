import { createServer, IncomingHttpHeaders, request as forward, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';

/**
 * What the proxy does with one request:
 * - `relay`: forward it and pass the answer back;
 * - `drop`: forward it, wait for the gateway's whole answer, then close the client's connection without
 *   a byte of it (the answer lost after the gateway committed);
 * - `withhold`: forward it and never pass the answer back (the client's time limit must end it);
 * - an answer of its own, sent without forwarding.
 */
export type ProxyAction = 'relay' | 'drop' | 'withhold' | { status: number; headers?: Record<string, string>; body?: string };

export interface ProxiedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface UpstreamAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

// Hop-by-hop headers describe one connection, not the message; the proxy's own connections set their own.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

const endToEnd = (headers: IncomingHttpHeaders) => Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));

/** An HTTP proxy in front of a gateway that does to each request what `script` says, and records everything. */
export class ScriptedProxy {
  readonly requests: ProxiedRequest[] = [];
  /** The gateway's answer to each forwarded request, by request index, whatever the client got. */
  readonly answers: Array<UpstreamAnswer | undefined> = [];
  private readonly withheld = new Set<ServerResponse>();
  private server!: Server;
  url = '';

  constructor(
    private readonly target: string,
    public script: (index: number, request: ProxiedRequest) => ProxyAction = () => 'relay',
  ) {}

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const proxied = { method: request.method!, url: request.url!, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
        const index = this.requests.push(proxied) - 1;
        const action = this.script(index, proxied);
        if (typeof action === 'object') {
          response.writeHead(action.status, action.headers ?? {});
          response.end(action.body ?? '');
          return;
        }
        if (action === 'withhold') this.withheld.add(response);
        this.forward(proxied).then(
          (answer) => {
            this.answers[index] = answer;
            if (action === 'drop') response.socket?.destroy();
            if (action !== 'relay') return;
            response.writeHead(answer.status, endToEnd(answer.headers));
            response.end(answer.body);
          },
          () => response.socket?.destroy(),
        );
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The requests' values of one header, in order. */
  headerValues(name: string): Array<string | undefined> {
    return this.requests.map((request) => request.headers[name.toLowerCase()] as string | undefined);
  }

  async stop(): Promise<void> {
    for (const response of this.withheld) response.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private forward(request: ProxiedRequest): Promise<UpstreamAnswer> {
    return new Promise((resolve, reject) => {
      const upstream = forward(new URL(request.url, this.target), { method: request.method, headers: endToEnd(request.headers) }, (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => resolve({ status: answer.statusCode!, headers: answer.headers, body: Buffer.concat(chunks).toString('utf8') }));
        answer.on('error', reject);
      });
      upstream.on('error', reject);
      upstream.end(request.body);
    });
  }
}

import { Socket } from 'node:net';
import pg from 'pg';

/** Each pooled connection's socket, by its client and by every view of it a borrower was handed. */
const sockets = new WeakMap<object, Socket>();

/**
 * pg's Client, each constructed with a socket the gateway made (pg's documented `stream` option) and
 * keeps, so that the statements of one round trip can leave in one write (`sentTogether`). The socket is
 * the one pg would make itself, a plain `net.Socket`.
 */
export function withOwnSockets(Client: typeof pg.Client): typeof pg.Client {
  return new Proxy(Client, {
    construct(target, [config]: [pg.ClientConfig | undefined], newTarget) {
      const socket = new Socket();
      const client = Reflect.construct(target, [{ ...config, stream: () => socket }], newTarget) as pg.Client;
      sockets.set(client, socket);
      return client;
    },
  });
}

/** `view`, a borrower's view of `client` (src/database/connection-gate.ts), sends through client's socket. */
export function sameSocket(view: object, client: object): void {
  const socket = sockets.get(client);
  if (socket) sockets.set(view, socket);
}

/**
 * Runs `send`, which issues statements on `client`, with the connection's socket corked: in pipeline mode
 * pg writes each statement as it is issued, so without this the statements of one round trip reach
 * PostgreSQL in as many writes, each a system call here and a wake-up there. Uncorked, what `send` issued
 * leaves in one. Over TLS pg writes to a TLS socket of its own, and each statement still leaves by itself.
 */
export function sentTogether<T>(client: object, send: () => T): T {
  const socket = sockets.get(client);
  if (!socket) return send();
  socket.cork();
  try {
    return send();
  } finally {
    socket.uncork();
  }
}

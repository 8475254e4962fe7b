import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { TrustedProxies } from './trusted-proxies.js';

/**
 * At most `perClient` open connections from one address: a client that opens sockets and never finishes a
 * request (each held until the header timeout) can otherwise take every connection the server allows from
 * all the others. A trusted proxy's connections carry many clients, so they are not counted. The
 * connection over the limit is closed at once, before anything is read from it.
 */
export function limitConnectionsPerClient(server: Server, perClient: number, trusted: TrustedProxies): void {
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (!address || trusted.trusts(address)) return;
    const count = (open.get(address) ?? 0) + 1;
    if (count > perClient) {
      socket.destroy();
      return;
    }
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}

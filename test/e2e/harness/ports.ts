import * as net from 'node:net';

/**
 * A TCP port on 127.0.0.1 nothing listens on now (bound on port 0, then
 * released): for a server a test starts on it, or a refused connection.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

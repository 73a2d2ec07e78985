import { createServer } from 'node:net';

/**
 * Asks the kernel for a TCP port that is free on `host` right now. Another
 * process may take it before Postgres binds it, so callers retry on "address
 * already in use".
 */
export function pickFreePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}

import { createServer } from 'node:net';

/**
 * A TCP port on `host` that was free a moment ago: for a process that
 * must be told its port before it starts (a replica behind the nginx
 * front, a listener of the front itself). Another process may take it in
 * between; the one that then fails to bind says so.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

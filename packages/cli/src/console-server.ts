import { readFile } from 'node:fs/promises';
import * as http from 'node:http';
import { extname, join, resolve, sep } from 'node:path';

/** Where the console's page finds the services (served as `/config.json`). */
export interface ConsoleServices {
  readonly admissionUrl: string;
  readonly eventsUrl: string;
}

/** Options of {@link serveConsole}. */
export interface ServeConsoleOptions {
  /** The console's built files (`packages/console/dist`). */
  readonly root: string;
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Asked on every `/config.json`: the services may be known only after the console listens. */
  readonly services: () => ConsoleServices | undefined;
}

/** A listening console server. */
export interface ConsoleServer {
  /** `http://host:port`: the console's origin, which the services must allow (`DOCKET_CORS_ORIGINS`). */
  readonly url: string;
  close(): Promise<void>;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Serves the built console (GET and HEAD only, files under `root` only,
 * `index.html` for `/`) and `/config.json` with the services' addresses.
 * Every answer forbids framing and sniffing, and the page's Content
 * Security Policy lets it run only its own scripts and talk only to itself
 * and the two services.
 */
export async function serveConsole(options: ServeConsoleOptions): Promise<ConsoleServer> {
  const root = resolve(options.root);
  const server = http.createServer((request, response) => {
    void answer(root, options, request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end('console server error\n');
    });
  });
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(options.port, options.host, () => {
      server.off('error', fail);
      done();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('console server has no TCP address');
  return {
    url: `http://${options.host}:${address.port}`,
    close: () =>
      new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      }),
  };
}

async function answer(root: string, options: ServeConsoleOptions, request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  const services = options.services();
  response.setHeader('x-content-type-options', 'nosniff');
  response.setHeader('x-frame-options', 'DENY');
  response.setHeader('referrer-policy', 'no-referrer');
  response.setHeader('content-security-policy', contentSecurityPolicy(services));
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
    return;
  }
  const path = decodeURIComponent(new URL(request.url ?? '/', 'http://console').pathname);
  if (path === '/config.json') {
    response.writeHead(services === undefined ? 503 : 200, { 'content-type': CONTENT_TYPES['.json'], 'cache-control': 'no-store' });
    response.end(JSON.stringify(services ?? {}));
    return;
  }
  const file = resolve(join(root, path === '/' ? 'index.html' : path));
  if (!file.startsWith(root + sep)) {
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    return;
  }
  let body: Buffer;
  try {
    body = await readFile(file);
  } catch {
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    return;
  }
  response.writeHead(200, {
    'content-type': CONTENT_TYPES[extname(file)] ?? 'application/octet-stream',
    'cache-control': file.includes(`${sep}assets${sep}`) ? 'public, max-age=31536000, immutable' : 'no-cache',
  });
  response.end(request.method === 'HEAD' ? undefined : body);
}

function contentSecurityPolicy(services: ConsoleServices | undefined): string {
  const origins = services === undefined ? [] : [new URL(services.admissionUrl).origin, new URL(services.eventsUrl).origin];
  return [
    "default-src 'self'",
    `connect-src 'self' ${[...new Set(origins)].join(' ')}`.trim(),
    "img-src 'self' data:",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

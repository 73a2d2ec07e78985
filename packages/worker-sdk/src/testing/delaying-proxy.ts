import * as http2 from 'node:http2';
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';

/** One call that went through the proxy. */
export interface ProxiedCall {
  /** The RPC's method name (`ReportOutcome`, `ClaimJobs`, ...). */
  readonly method: string;
  /** When the proxy received the request (`performance.now()`). */
  readonly sentAt: number;
  /** When the upstream service's whole answer had arrived. */
  answeredAt?: number;
  /** When the proxy began handing the answer to the caller (`answeredAt` plus any delay): the caller cannot have heard it before. */
  releasedAt?: number;
}

/** A plaintext HTTP/2 (h2c) proxy in front of one gRPC service. */
export interface DelayingProxy {
  /** Where to connect instead of the service (`http://127.0.0.1:<port>`). */
  readonly url: string;
  /** Every call so far, in the order they arrived. */
  readonly calls: readonly ProxiedCall[];
  /** Holds each answer of `method` for `ms` after the service gave it (0 stops delaying). */
  delay(method: string, ms: number): void;
  /** Closes every session and the listener. */
  close(): Promise<void>;
}

/** Headers HTTP/2 forbids or that describe one hop only. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'http2-settings']);

/**
 * Starts a proxy that relays every gRPC call to `upstreamUrl` over real
 * HTTP/2, buffering each answer (headers, messages, trailers) and
 * delivering it after the delay set for its method: the service has done
 * the work and answered, only the caller hears late, as over a slow
 * network. Unary calls only (the whole answer is buffered), which is every
 * ExecutionService RPC. A caller's cancel is passed on upstream.
 */
export async function startDelayingProxy(upstreamUrl: string): Promise<DelayingProxy> {
  const upstream = http2.connect(upstreamUrl);
  upstream.on('error', () => undefined); // each stream reports its own failure
  const delays = new Map<string, number>();
  const calls: ProxiedCall[] = [];
  const sessions = new Set<http2.ServerHttp2Session>();
  const server = http2.createServer();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    // A worker that stops cancels its session (GOAWAY, CANCEL): each of its streams reports its own end.
    session.on('error', () => undefined);
  });
  server.on('stream', (downstream, headers) => {
    const path = String(headers[':path']);
    const call: ProxiedCall = { method: path.slice(path.lastIndexOf('/') + 1), sentAt: performance.now() };
    calls.push(call);
    const outgoing = upstream.request({ ':method': 'POST', ':path': path, ...forwarded(headers) });
    downstream.pipe(outgoing);
    downstream.on('close', () => {
      if (!outgoing.closed) outgoing.close(http2.constants.NGHTTP2_CANCEL);
    });
    let responseHeaders: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders | undefined;
    const body: Buffer[] = [];
    outgoing.on('response', (received) => (responseHeaders = received));
    outgoing.on('data', (chunk: Buffer) => body.push(chunk));
    outgoing.on('trailers', (received) => (trailers = received));
    outgoing.on('error', () => {
      if (!downstream.closed) downstream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    });
    outgoing.on('end', () => {
      call.answeredAt = performance.now();
      setTimeout(() => {
        if (downstream.closed) return;
        call.releasedAt = performance.now();
        const status = { ':status': Number(responseHeaders[':status'] ?? 200), ...forwarded(responseHeaders) };
        const ending = trailers;
        if (body.length === 0 && !ending) {
          downstream.respond(status, { endStream: true }); // trailers-only answer
        } else {
          if (ending) downstream.once('wantTrailers', () => downstream.sendTrailers(forwarded(ending)));
          downstream.respond(status, { waitForTrailers: ending !== undefined });
          for (const chunk of body) downstream.write(chunk);
          downstream.end();
        }
      }, delays.get(call.method) ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    delay: (method, ms) => void (ms > 0 ? delays.set(method, ms) : delays.delete(method)),
    close: async () => {
      for (const session of sessions) session.destroy();
      upstream.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The headers worth passing on: no pseudo-headers, no hop-by-hop headers. */
function forwarded(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (!name.startsWith(':') && !HOP_HEADERS.has(name) && value !== undefined) out[name] = value;
  }
  return out;
}

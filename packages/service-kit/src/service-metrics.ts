import type * as http from 'node:http';
import type * as http2 from 'node:http2';
import { ConnectError, Code, type Interceptor } from '@connectrpc/connect';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * One service process's Prometheus metrics: the RPCs it answered (count
 * and latency by method and gRPC code), Node's process metrics, and
 * whatever the service registers on {@link registry} (queue depth, pool
 * use, batch sizes, subscribers). Served as the Prometheus text format on
 * `GET /metrics` of the service's own port, without authentication: it
 * holds counts, never ids, keys or payloads.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'method' | 'code'>;
  readonly #duration: Histogram<'method' | 'code'>;

  constructor(service: string) {
    this.registry.setDefaultLabels({ service });
    collectDefaultMetrics({ register: this.registry, prefix: 'docket_' });
    this.#requests = new Counter({ name: 'docket_rpc_requests_total', help: 'RPCs answered, by method and gRPC code', labelNames: ['method', 'code'], registers: [this.registry] });
    this.#duration = new Histogram({
      name: 'docket_rpc_duration_seconds',
      help: 'Time to the response headers (unary: the whole call), by method and gRPC code',
      labelNames: ['method', 'code'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
  }

  /** Counts and times every RPC; outermost, so it sees the codes callers see. */
  readonly interceptor: Interceptor = (next) => async (request) => {
    const started = performance.now();
    const method = `${request.service.typeName}/${request.method.name}`;
    const record = (code: string) => {
      this.#requests.inc({ method, code });
      this.#duration.observe({ method, code }, (performance.now() - started) / 1000);
    };
    try {
      const response = await next(request);
      record('OK');
      return response;
    } catch (error) {
      record(Code[ConnectError.from(error).code] ?? 'Unknown');
      throw error;
    }
  };

  /** Answers `GET /metrics`; true when it did (the request was for it). */
  serve(request: http.IncomingMessage | http2.Http2ServerRequest, response: http.ServerResponse | http2.Http2ServerResponse): boolean {
    if (request.method !== 'GET' || request.url !== '/metrics') return false;
    void this.registry.metrics().then(
      (text) => {
        response.writeHead(200, { 'content-type': this.registry.contentType });
        response.end(text);
      },
      () => {
        response.writeHead(500, { 'content-type': 'text/plain' });
        response.end('metrics unavailable\n');
      },
    );
    return true;
  }
}

// A gRPC health probe for environments without native gRPC probes (Docker
// Compose `healthcheck`, plain `docker run`). Kubernetes uses its built-in
// `grpc:` probes instead and never runs this file.
//
// Usage: node deploy/healthcheck.mjs [host:port] [service]
//   host:port defaults to DOCKET_LISTEN, with a wildcard host (0.0.0.0, ::)
//   replaced by loopback; service defaults to '' (the whole server).
// Exits 0 when grpc.health.v1.Health/Check answers SERVING within 3 s, and
// 1 otherwise (NOT_SERVING while draining, unreachable, timeout).
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import {
  Health,
  HealthCheckResponse_ServingStatus,
} from '@docket/proto/grpc/health/v1/health_pb';

const PROBE_TIMEOUT_MS = 3000;

function probeAddress(listen) {
  const match = /^(.*):(\d+)$/.exec(listen ?? '');
  if (!match) throw new Error('no address: pass host:port or set DOCKET_LISTEN');
  const host = match[1].replace(/^\[|\]$/g, '');
  const loopback = host === '' || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${loopback.includes(':') ? `[${loopback}]` : loopback}:${match[2]}`;
}

const [addressArg, service = ''] = process.argv.slice(2);
try {
  const transport = createGrpcTransport({
    baseUrl: probeAddress(addressArg ?? process.env.DOCKET_LISTEN),
  });
  const health = createClient(Health, transport);
  const response = await health.check({ service }, { timeoutMs: PROBE_TIMEOUT_MS });
  const status = HealthCheckResponse_ServingStatus[response.status] ?? String(response.status);
  if (response.status !== HealthCheckResponse_ServingStatus.SERVING) {
    console.error(`health: ${status}`);
    process.exit(1);
  }
  process.exit(0);
} catch (error) {
  console.error(`health: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}

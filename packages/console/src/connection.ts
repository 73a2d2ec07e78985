import { createGrpcWebTransport } from '@connectrpc/connect-web';
import { bearerAuth, createClient, type DocketClient } from '@docket/client';
import type { ConsoleConfig } from './console-config.js';

/**
 * A `@docket/client` for this tab: gRPC-Web over `fetch` to admission and
 * events, every call authenticated with `token`. gRPC-Web (rather than the
 * Connect protocol) because it answers refusals with HTTP 200 and the
 * status in trailers, so a refused call is not also reported by the
 * browser as a failed resource load. Binary protobuf on the wire.
 */
export function connect(config: ConsoleConfig, token: string): DocketClient {
  const transport = (baseUrl: string) => createGrpcWebTransport({ baseUrl, interceptors: [bearerAuth(token)] });
  return createClient({
    transports: { admission: transport(config.admissionUrl), events: transport(config.eventsUrl) },
    // A browser tab is interactive: fail fast and let the person retry.
    retry: { tries: 3, perTryTimeoutMs: 15_000 },
  });
}

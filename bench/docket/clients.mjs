// Connect gRPC clients for Docket's public services, built from this
// repository's generated code whichever checkout the services run from (the
// public API does not change between the commits compared).
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';

/** A Connect gRPC client for `service` at `url` that sends `token` as a bearer. */
export function clientWith(service, url, token) {
  return createClient(
    service,
    createGrpcTransport({
      baseUrl: url,
      interceptors: [(next) => (request) => (request.header.set('authorization', `Bearer ${token}`), next(request))],
    }),
  );
}

// Clients for Docket's public services, as Docket's own Node clients make
// them (`createServiceConnection` of @docket/client-kit, what @docket/client,
// the worker SDK and the CLI use: gRPC over one HTTP/2 session, unary calls
// written by hand), built from this repository whichever checkout the
// services run from (the public API does not change between the commits
// compared).
import { createClient } from '@connectrpc/connect';
import { createServiceConnection } from '@docket/client-kit/node';

/** A client for `service` at `url` that sends `token` as a bearer. */
export function clientWith(service, url, token) {
  return createClient(service, createServiceConnection({ baseUrl: url, token }).transport);
}

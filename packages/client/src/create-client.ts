import { DocketClient, type ClientOptions } from './docket-client.js';
import { createNodeTransports } from './node-transports.js';

/**
 * A {@link DocketClient}. Give `url` (or `admissionUrl` and `eventsUrl`)
 * and `token` to connect from Node over gRPC, or `transports` built for
 * your platform.
 *
 * @example
 * const client = createClient({ url: 'http://127.0.0.1', token: process.env.DOCKET_TOKEN! });
 */
export function createClient(options: ClientOptions): DocketClient {
  return new DocketClient(options, createNodeTransports);
}

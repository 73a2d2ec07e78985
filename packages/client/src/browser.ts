/**
 * `@docket/client` for browsers (the `browser` condition of the package's
 * exports): everything the Node entry offers except the Node transports.
 * Pass connect-web transports, authenticated with `bearerAuth` (and traced
 * with `tracedCalls`, if you use OpenTelemetry):
 *
 * ```ts
 * const transport = (baseUrl: string) => createGrpcWebTransport({ baseUrl, interceptors: [bearerAuth(token)] });
 * const client = createClient({ transports: { admission: transport(admissionUrl), events: transport(eventsUrl) } });
 * ```
 */
import { DocketClient, type ClientOptions } from './docket-client.js';
import type { DocketTransports } from './transports.js';

export * from './portable.js';

/** A {@link DocketClient} over the `transports` given (a browser has no Node transports). */
export function createClient(options: Extract<ClientOptions, { readonly transports: DocketTransports }>): DocketClient {
  return new DocketClient(options);
}

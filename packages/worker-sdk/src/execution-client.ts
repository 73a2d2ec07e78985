import { createClient, type Client, type Transport } from '@connectrpc/connect';
import { SDK_KEEPALIVE, type TokenSource } from '@docket/client-kit';
import { createServiceConnection } from '@docket/client-kit/node';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { WorkSessionClient } from './work-session.js';

/** A typed client of `docket.execution.v1.ExecutionService`. */
export type ExecutionClient = Client<typeof ExecutionService>;

export type { TokenSource } from '@docket/client-kit';

/** An execution client plus the means to close its connection. */
export interface ExecutionConnection {
  readonly client: ExecutionClient;
  /** Closes the HTTP/2 session (no-op for a caller-supplied transport). */
  close(): void;
}

/** How {@link connectExecution} connects. */
export interface ConnectOptions {
  /** A ready transport to use instead of connecting to the URL (it must authenticate its calls itself). */
  readonly transport?: Transport | undefined;
  /** Carry claims and attempt calls on a worker session (see {@link WorkSessionClient}); default true. */
  readonly session?: boolean;
}

/**
 * Connects to the execution service at `url` over gRPC (h2c for
 * `http://`, TLS for `https://`), presenting `token` as
 * `authorization: Bearer <token>`, each call continuing the caller's
 * trace. The HTTP/2 session is pinged (`SDK_KEEPALIVE`: every 15 s) so a
 * dead connection is noticed during a long-poll. A `transport`, when
 * given, is used as it is instead (tests, custom TLS or proxies): it
 * must authenticate its calls itself, and `token` is not used. Unless
 * `session` is false, claims and attempt calls travel on one
 * ExecutionService/Work stream.
 */
export function connectExecution(url: string, token: TokenSource | undefined, options: ConnectOptions = {}): ExecutionConnection {
  const unary = unaryConnection(url, token, options.transport);
  if (options.session === false) return unary;
  const session = new WorkSessionClient(unary.client);
  return {
    client: session.client,
    close: () => {
      session.close();
      unary.close();
    },
  };
}

function unaryConnection(url: string, token: TokenSource | undefined, transport: Transport | undefined): ExecutionConnection {
  if (transport) return { client: createClient(ExecutionService, transport), close() {} };
  if (token === undefined) throw new TypeError('a token is required without a transport');
  const { transport: connected, session } = createServiceConnection({ baseUrl: url, token, tracerName: '@docket/worker-sdk', keepalive: SDK_KEEPALIVE });
  return { client: createClient(ExecutionService, connected), close: () => session.abort() };
}


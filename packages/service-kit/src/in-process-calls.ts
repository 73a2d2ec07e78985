import type { ContextValues, Transport } from '@connectrpc/connect';
import { createUniversalHandlerClient, type UniversalHandler } from '@connectrpc/connect/protocol';
import { createTransport } from '@connectrpc/connect/protocol-connect';
import { bearerAuth, bearerValue, type TokenSource } from '@docket/client-kit';
import { headerFields } from '@docket/client-kit/node';
import type { InMemoryUnaryServer } from './in-memory-unary-call.js';

/**
 * The servers of this process that answer their calls in memory, by URL:
 * in one process (`@docket/one-process`), a front service whose state URL
 * is a server here calls it without a socket (see {@link inProcessTransportOf}).
 * Nothing registers unless a process asks for it: the in-process test
 * cluster keeps its real sockets.
 */
const answeringInMemory = new Map<string, InProcessServer>();

/** What a server offers to callers in its own process. */
export interface InProcessServer {
  /** The server's URL, as its callers are configured with it. */
  readonly url: string;
  /** Its handlers (every protocol's, the same interceptors as on the wire): what streams go through. */
  readonly handlers: readonly UniversalHandler[];
  /** Its unary methods' interceptor chains, called directly. */
  readonly unary: InMemoryUnaryServer;
  /** The context values every call starts with (the drain signal). */
  readonly contextValues: () => ContextValues;
  /** Its request-size limit, in bytes. */
  readonly readMaxBytes: number;
}

/**
 * Has the server at `server.url` answer this process's calls to that URL in
 * memory, until the returned function is called (at its shutdown).
 */
export function answerInProcess(server: InProcessServer): () => void {
  answeringInMemory.set(server.url, server);
  return () => {
    if (answeringInMemory.get(server.url) === server) answeringInMemory.delete(server.url);
  };
}

/**
 * A transport to the server of this process at `url`, when one answers in
 * memory ({@link answerInProcess}); undefined otherwise. Each call sends
 * `token` as its bearer and goes through the server's own interceptors
 * (authentication, error mapping, deadlines, request bounds, logging,
 * metrics) without a socket, HTTP/2 or a second process: a unary call
 * straight into its method's chain (`inMemoryUnaryServer`), a stream
 * through Connect's handlers as Connect's binary protocol. Messages are
 * copied through their encoding either way, so neither side shares an
 * object the other could change.
 */
export function inProcessTransportOf(url: string, token: TokenSource): Transport | undefined {
  const server = answeringInMemory.get(url);
  if (server === undefined) return undefined;
  const handlers = server.handlers.map((handler) =>
    Object.assign((request: Parameters<UniversalHandler>[0]) => handler({ ...request, contextValues: server.contextValues() }), { requestPath: handler.requestPath }),
  );
  const connect = createTransport({
    httpClient: createUniversalHandlerClient(handlers as unknown as UniversalHandler[]),
    baseUrl: url,
    useBinaryFormat: true,
    interceptors: [bearerAuth(token)],
    acceptCompression: [],
    sendCompression: null,
    compressMinBytes: Number.MAX_SAFE_INTEGER,
    readMaxBytes: Number.MAX_SAFE_INTEGER,
    writeMaxBytes: server.readMaxBytes,
  });
  return {
    async unary(method, signal, timeoutMs, header, input, contextValues) {
      const fields = headerFields(header);
      fields['authorization'] = await bearerValue(token);
      return server.unary(method, input, { header: fields, timeoutMs, signal }) ?? connect.unary(method, signal, timeoutMs, header, input, contextValues);
    },
    stream: (...args) => connect.stream(...args),
  };
}

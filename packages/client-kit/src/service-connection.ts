import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import type { Interceptor, Transport } from '@connectrpc/connect';
import { Http2SessionManager, createGrpcTransport, type GrpcTransportOptions } from '@connectrpc/connect-node';
import { isTracingRegistered, tracedCalls } from '@docket/trace-context';
import { bearerAuth, bearerValue, type TokenSource } from './bearer.js';
import type { ReceiveWindows, SessionKeepalive } from './connection-limits.js';
import { callBidiStream } from './bidi-stream-client.js';
import { callUnaryStream, headerFields } from './unary-stream-client.js';

/** Options of {@link createServiceConnection}. */
export interface ServiceConnectionOptions {
  /** The service's URL: gRPC over h2c for `http://`, over TLS for `https://`. */
  readonly baseUrl: string;
  /** Sent as `authorization: Bearer <token>` on every call; without it calls go unauthenticated (a health check). */
  readonly token?: TokenSource | undefined;
  /**
   * The OpenTelemetry tracer name under which each call is a CLIENT span
   * of the caller's trace, carrying its `traceparent` (see `tracedCalls`);
   * without it calls are not traced.
   */
  readonly tracerName?: string | undefined;
  /**
   * How the session is pinged (`SDK_KEEPALIVE`, `INTERNAL_KEEPALIVE`);
   * without it never, Connect's default: for a short-lived command, one
   * call or a few, where nothing waits long on a quiet connection.
   */
  readonly keepalive?: SessionKeepalive | undefined;
  /** Receive windows wider than HTTP/2's 64 KiB (`INTERNAL_RECEIVE_WINDOWS`); without it HTTP/2's. */
  readonly receiveWindows?: ReceiveWindows | undefined;
  /** Interceptors around the bearer-token and tracing ones, the first outermost. */
  readonly outerInterceptors?: readonly Interceptor[] | undefined;
  /** Interceptors within the bearer-token and tracing ones, the last innermost. */
  readonly innerInterceptors?: readonly Interceptor[] | undefined;
  /** The compressions answers may use; without it Connect's (gzip, brotli). */
  readonly acceptCompression?: GrpcTransportOptions['acceptCompression'];
}

/** A gRPC transport to one service, over one multiplexed HTTP/2 session. */
export interface ServiceConnection {
  readonly transport: Transport;
  /**
   * The session's manager: `abort()` closes the connection at once (calls
   * in flight fail) and the next call opens a new one.
   */
  readonly session: Http2SessionManager;
}

/**
 * The one way a Docket caller (the client, the worker SDK, the CLI, a
 * service calling another) connects to a service: connect-node's gRPC
 * transport over one HTTP/2 session, pinged as `keepalive` says, sending
 * the bearer token on every call and, with a `tracerName`, continuing the
 * caller's trace. What differs between callers is said by the options;
 * the interceptors run in the order outer, bearer token, tracing, inner.
 *
 * Without interceptors of the caller's own, a unary call is written and
 * read by hand on the session (`callUnaryStream`: a quarter of the CPU of
 * Connect's path on this project's machines), and so is a bidirectional
 * one (`callBidiStream`, the worker session: the requests made together
 * are written together), unless an OpenTelemetry SDK is registered, when
 * they go through Connect's path as CLIENT spans.
 */
export function createServiceConnection(options: ServiceConnectionOptions): ServiceConnection {
  const { token, tracerName } = options;
  const connection = connectTransport(options);
  // A caller with interceptors of its own (a service's transport) keeps Connect's path and chooses for itself.
  if (options.outerInterceptors !== undefined || options.innerInterceptors !== undefined) return connection;
  const { transport: connected, session } = connection;
  // A traced call is a CLIENT span, with its traceparent: Connect's path, with the tracing interceptor.
  const traced = (): boolean => tracerName !== undefined && isTracingRegistered();
  const fieldsOf = async (header: Parameters<Transport['unary']>[3]): Promise<Record<string, string>> => {
    const fields = headerFields(header);
    if (token !== undefined) fields['authorization'] = await bearerValue(token);
    return fields;
  };
  const unary: Transport['unary'] = async (method, signal, timeoutMs, header, input, contextValues) => {
    if (traced()) return connected.unary(method, signal, timeoutMs, header, input, contextValues);
    return callUnaryStream({ session, method, input, header: await fieldsOf(header), timeoutMs, signal });
  };
  const stream: Transport['stream'] = async (method, signal, timeoutMs, header, input, contextValues) => {
    if (method.methodKind !== 'bidi_streaming' || traced()) return connected.stream(method, signal, timeoutMs, header, input, contextValues);
    return callBidiStream({ session, method, input, header: await fieldsOf(header), timeoutMs, signal });
  };
  return { transport: { unary, stream }, session };
}

/** Connect's gRPC transport over the session, with the interceptors the options ask for. */
function connectTransport(options: ServiceConnectionOptions): ServiceConnection {
  const { baseUrl, token, tracerName, keepalive, receiveWindows } = options;
  const session = receiveWindows ? new WideWindowSessionManager(baseUrl, keepalive, receiveWindows) : new Http2SessionManager(baseUrl, keepalive);
  const interceptors = [
    ...(options.outerInterceptors ?? []),
    ...(token === undefined ? [] : [bearerAuth(token)]),
    ...(tracerName === undefined ? [] : [tracedCalls(tracerName)]),
    ...(options.innerInterceptors ?? []),
  ];
  const transport = createGrpcTransport({
    baseUrl,
    sessionManager: session,
    interceptors,
    ...(options.acceptCompression === undefined ? {} : { acceptCompression: options.acceptCompression }),
  });
  return { transport, session };
}

/**
 * A session manager whose sessions take `windows`: each stream's is a
 * setting of the session, but HTTP/2 gives the connection a 64 KiB window
 * whatever its streams' and Node offers no option for it, so each new
 * session is widened when its first stream opens.
 */
class WideWindowSessionManager extends Http2SessionManager {
  readonly #widened = new WeakSet<ClientHttp2Session>();
  readonly #connectionBytes: number;

  constructor(baseUrl: string, keepalive: SessionKeepalive | undefined, windows: ReceiveWindows) {
    super(baseUrl, keepalive, { settings: { initialWindowSize: windows.streamBytes } });
    this.#connectionBytes = windows.connectionBytes;
  }

  override async request(...args: Parameters<Http2SessionManager['request']>): Promise<ClientHttp2Stream> {
    const stream = await super.request(...args);
    const session = stream.session as ClientHttp2Session | undefined;
    if (session && !session.destroyed && !this.#widened.has(session)) {
      this.#widened.add(session);
      session.setLocalWindowSize(this.#connectionBytes);
    }
    return stream;
  }
}

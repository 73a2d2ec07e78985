/**
 * The HTTP/2 keepalive and receive windows of the connections Docket's
 * callers open to a service (see `createServiceConnection` of
 * `@docket/client-kit/node`). Choices of the callers, not SPEC numbers:
 * those are `LIMITS` of `@docket/contracts`.
 */

/**
 * How a caller's HTTP/2 session is pinged while calls or streams are open:
 * a dead or half-open connection (a killed server, a partition) is closed,
 * and its calls fail UNAVAILABLE, within `pingIntervalMs + pingTimeoutMs`,
 * also while a stream is quiet. Connect's `Http2SessionManager` option
 * names.
 */
export interface SessionKeepalive {
  /** How long a session may go without a frame before it is pinged. */
  readonly pingIntervalMs: number;
  /** How long a ping may go unanswered before the session is closed. */
  readonly pingTimeoutMs: number;
}

/**
 * The SDKs' sessions (the client's to admission and events, the worker's
 * to execution): a long-poll claim or a quiet watch notices a dead server
 * within 25 s.
 */
export const SDK_KEEPALIVE: SessionKeepalive = Object.freeze({ pingIntervalMs: 15_000, pingTimeoutMs: 10_000 });

/**
 * A service's session to another (the front services' to state): inside
 * one network a dead peer is given up within 15 s, sooner than a client
 * gives up on the service in front of it.
 */
export const INTERNAL_KEEPALIVE: SessionKeepalive = Object.freeze({ pingIntervalMs: 10_000, pingTimeoutMs: 5_000 });

/** What the other side of a session may have sent and this side not yet read. */
export interface ReceiveWindows {
  /** The window of each stream (HTTP/2's `initialWindowSize`). */
  readonly streamBytes: number;
  /** The window of the connection, all its streams together. */
  readonly connectionBytes: number;
}

/**
 * The receive windows of an internal session. HTTP/2's default, 64 KiB
 * for each stream and for the connection, splits a 2,048-event journal
 * read (about 0.9 MB) into waits for window updates, each a turn of both
 * processes' event loops. Under a stream window of 4 MiB an answer this
 * side reads at once is never held back. Left at 64 KiB, the connection's
 * window, not the streams', paced every answer: a journal read's answer
 * then left the state service 64 KiB per turn of its event loop, so while
 * that loop verified the next read the answer before it waited (measured:
 * backlog replay 11-12% faster with it widened, the events service
 * spending about a sixth less CPU per event). 16 MiB bounds what the other
 * side can make this one buffer.
 */
export const INTERNAL_RECEIVE_WINDOWS: ReceiveWindows = Object.freeze({ streamBytes: 4 * 1024 * 1024, connectionBytes: 16 * 1024 * 1024 });

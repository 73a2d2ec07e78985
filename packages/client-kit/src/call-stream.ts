import type * as http2 from 'node:http2';
import type { DescMethod } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import type { Http2SessionManager } from '@connectrpc/connect-node';
import { findTrailerError } from '@connectrpc/connect/protocol-grpc';
import { receivedHeaders } from './received-headers.js';

/*
 * What the calls Docket's Node clients write by hand (`callUnaryStream`,
 * `callBidiStream`) share: their request headers, how a stream is opened
 * and how an answer's status reads.
 */

/** The reason a call fails when the peer is lost under it: UNAVAILABLE, which callers retry. */
export const PEER_LOST = 'the peer service is unavailable';

/** A binary gRPC call's request headers: the caller's, the protocol's, and the deadline as `grpc-timeout`. */
export function callHeaders(header: Record<string, string>, timeoutMs: number | undefined): http2.OutgoingHttpHeaders {
  const headers: http2.OutgoingHttpHeaders = { ...header, 'content-type': 'application/grpc+proto', te: 'trailers' };
  if (timeoutMs !== undefined) headers['grpc-timeout'] = `${Math.max(1, Math.ceil(timeoutMs))}m`;
  return headers;
}

/** The request path of `method`: `/<service>/<method>`. */
export function callPath(method: DescMethod): string {
  return `/${method.parent.typeName}/${method.name}`;
}

/** A failure to open a call's stream as the caller sees it: the session manager's own UNAVAILABLE says why (`connect ECONNREFUSED ...`). */
export function openingFailure(error: unknown): ConnectError {
  return error instanceof ConnectError && error.code === Code.Unavailable ? error : new ConnectError(PEER_LOST, Code.Unavailable, undefined, undefined, error);
}

/**
 * How a call ends, once: its deadline (`timeoutMs` from now) fails it
 * DEADLINE_EXCEEDED and its caller's `signal` CANCELLED with its reason,
 * through `fail`, whichever comes first; {@link settle} runs the first
 * outcome it is given (those, the answer, a lost stream) and stops
 * watching both.
 */
export class CallEnd {
  #settled = false;
  readonly #deadline: ReturnType<typeof setTimeout> | undefined;
  readonly #onAbort: () => void;

  constructor(
    timeoutMs: number | undefined,
    private readonly signal: AbortSignal | undefined,
    fail: (error: ConnectError) => void,
  ) {
    this.#deadline = timeoutMs === undefined ? undefined : setTimeout(() => fail(new ConnectError('the deadline passed', Code.DeadlineExceeded)), timeoutMs);
    this.#onAbort = () => fail(ConnectError.from(signal?.reason, Code.Canceled));
    signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Whether the call has ended. */
  get settled(): boolean {
    return this.#settled;
  }

  /** Ends the call with `outcome`, unless it has ended already. */
  settle(outcome: () => void): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#deadline);
    this.signal?.removeEventListener('abort', this.#onAbort);
    outcome();
  }
}

/**
 * Opens a call's stream on `session`, giving up (and cancelling a stream
 * that opens later) when `signal` aborts (CANCELLED) or `timeoutMs` passes
 * first (DEADLINE_EXCEEDED): opening may itself wait on a network that no
 * longer answers.
 */
export function openCallStream(
  session: Http2SessionManager,
  method: DescMethod,
  header: Record<string, string>,
  timeoutMs: number | undefined,
  signal: AbortSignal | undefined,
): Promise<http2.ClientHttp2Stream> {
  if (signal?.aborted) return Promise.reject(ConnectError.from(signal.reason, Code.Canceled));
  return new Promise((resolve, reject) => {
    const end: CallEnd = new CallEnd(timeoutMs, signal, (error) => end.settle(() => reject(error)));
    session.request('POST', callPath(method), callHeaders(header, timeoutMs), {}).then(
      (opened) => {
        if (end.settled) opened.close(CANCEL);
        else end.settle(() => resolve(opened));
      },
      (error: unknown) => end.settle(() => reject(openingFailure(error))),
    );
  });
}

/** NGHTTP2_CANCEL, the code a call's stream is reset with when the caller gives up. */
export const CANCEL = 0x8;

/**
 * How an answer ended, from its response headers and trailers (or the
 * headers of a trailers-only answer): undefined for OK; UNAVAILABLE for an
 * answer that is not gRPC or has no status, and for CANCELLED or ABORTED
 * without details (a peer shutting down); otherwise the status with its
 * details.
 */
export function answerFailure(responseHeaders: http2.IncomingHttpHeaders | undefined, trailers: http2.IncomingHttpHeaders | undefined): ConnectError | undefined {
  const status = trailers ?? (responseHeaders?.['grpc-status'] !== undefined ? responseHeaders : undefined);
  if (Number(responseHeaders?.[':status']) !== 200 || status === undefined) return new ConnectError(PEER_LOST, Code.Unavailable);
  const failure = findTrailerError(receivedHeaders(status));
  if (failure && failure.details.length === 0 && (failure.code === Code.Canceled || failure.code === Code.Aborted)) return new ConnectError(PEER_LOST, Code.Unavailable);
  return failure;
}

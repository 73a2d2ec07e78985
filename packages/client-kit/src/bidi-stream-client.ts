import type * as http2 from 'node:http2';
import { create, fromBinary, isMessage, toBinary, type DescMessage, type DescMethodBiDiStreaming, type MessageInitShape, type MessageShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type StreamResponse } from '@connectrpc/connect';
import type { Http2SessionManager } from '@connectrpc/connect-node';
import { grpcFrame } from './grpc-frame.js';
import { PushedMessages } from './pushed-messages.js';
import { receivedHeaders } from './received-headers.js';
import { answerFailure, CANCEL, CallEnd, openCallStream, PEER_LOST } from './call-stream.js';

/** What {@link callBidiStream} needs of its caller: where to send, what to add, when to give up. */
export interface BidiStreamCall<I extends DescMessage, O extends DescMessage> {
  readonly session: Http2SessionManager;
  readonly method: DescMethodBiDiStreaming<I, O>;
  /** The requests, sent as they come; the stream is half-closed when they end. */
  readonly input: AsyncIterable<MessageInitShape<I>>;
  /** Header fields to send besides the protocol's (authorization, x-request-id, ...). */
  readonly header: Record<string, string>;
  /** The deadline, sent as `grpc-timeout` and kept locally too; none when undefined. */
  readonly timeoutMs: number | undefined;
  readonly signal: AbortSignal | undefined;
}

/** Answers read off the stream and not yet taken, past which the stream is paused (HTTP/2 flow control then holds the peer back). */
const READ_AHEAD = 64;

/**
 * One binary gRPC bidirectional call on a stream of `session`, written and
 * read by hand: the worker session (`ExecutionService/Work`) of Docket's
 * Node clients (`createServiceConnection`). It does what Connect's gRPC
 * transport does for such a call (the `grpc-timeout` header and a local
 * deadline, cancellation by `signal`, the status from trailers or a
 * trailers-only answer, with ErrorInfo and BadRequest details, HTTP/2 flow
 * control both ways), with one difference that is the reason it exists:
 * the requests the caller makes available together are written together.
 * Connect's transport writes one request and waits for that write to
 * complete before it takes the next, so sixteen calls a worker makes in
 * one turn of its event loop reached the service one by one, a fraction of
 * a millisecond apart and each in a turn of its own there, and the
 * service's batching sent the first alone. Here every request the input
 * yields before the writer's next tick goes out in one write.
 *
 * Failures are those of `callUnaryStream`: a stream that fails under the
 * call or an answer that is not gRPC is UNAVAILABLE, as is a CANCELLED or
 * ABORTED status without details; a passed deadline is DEADLINE_EXCEEDED;
 * the caller's own abort is CANCELLED with its reason. The promise
 * settles once the stream is open; the answers and the final status come
 * through the response's messages.
 */
export async function callBidiStream<I extends DescMessage, O extends DescMessage>(call: BidiStreamCall<I, O>): Promise<StreamResponse<I, O>> {
  const { method, signal } = call;
  const deadlineAt = call.timeoutMs === undefined ? undefined : performance.now() + call.timeoutMs;
  const stream = await openCallStream(call.session, method, call.header, call.timeoutMs, signal);
  // The deadline runs from the call's start: what opening the stream took is spent.
  const left = deadlineAt === undefined ? undefined : Math.max(0, deadlineAt - performance.now());
  const answers = new StreamAnswers(call.session, stream, method.output, left, signal);
  void writeRequests(stream, method.input, call.input, answers);
  return {
    stream: true,
    service: method.parent,
    method,
    get header() {
      return receivedHeaders(answers.responseHeaders ?? {});
    },
    get trailer() {
      return receivedHeaders(answers.trailers ?? {});
    },
    message: answers,
  };
}

/**
 * Writes the requests as the input yields them, each burst (what it yields
 * before the next tick, up to the stream's buffer size) in one write,
 * waiting for the stream to drain when it is full, and half-closes the
 * stream when the input ends. An input that fails fails the call.
 */
async function writeRequests<I extends DescMessage>(stream: http2.ClientHttp2Stream, schema: I, input: AsyncIterable<MessageInitShape<I>>, answers: StreamAnswers<DescMessage>): Promise<void> {
  const frames: Buffer[] = [];
  let framedBytes = 0;
  let drained: Promise<void> | undefined;
  let flushing = false;
  const flush = (): void => {
    flushing = false;
    if (frames.length === 0 || answers.settled) return;
    const chunk = frames.length === 1 ? (frames[0] as Buffer) : Buffer.concat(frames);
    frames.length = 0;
    framedBytes = 0;
    if (!stream.write(chunk)) drained = roomOrClose(stream);
  };
  try {
    for await (const request of input) {
      if (answers.settled) return;
      const frame = grpcFrame(toBinary(schema, isMessage(request, schema) ? request : create(schema, request)));
      frames.push(frame);
      framedBytes += frame.byteLength;
      // A burst past the stream's buffer goes now, so the stream's fullness holds the input back.
      if (framedBytes >= stream.writableHighWaterMark) flush();
      else if (!flushing) {
        flushing = true;
        process.nextTick(flush);
      }
      if (drained) {
        await drained;
        drained = undefined;
      }
    }
    flush();
    if (!answers.settled && !stream.closed) stream.end();
  } catch (error) {
    answers.fail(ConnectError.from(error, Code.Internal));
  }
}

/** Resolves once `stream` drained or closed, leaving no listener behind (a session's stream may fill many times). */
function roomOrClose(stream: http2.ClientHttp2Stream): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      stream.off('drain', done).off('close', done);
      resolve();
    };
    stream.once('drain', done).once('close', done);
  });
}

/**
 * The answers of one call as the caller reads them, in order, ending with
 * the call's status: nothing more after OK, its error otherwise.
 */
class StreamAnswers<O extends DescMessage> implements AsyncIterable<MessageShape<O>> {
  responseHeaders: http2.IncomingHttpHeaders | undefined;
  trailers: http2.IncomingHttpHeaders | undefined;
  readonly #answers: PushedMessages<MessageShape<O>>;
  #pending: Buffer = Buffer.alloc(0);
  readonly #end: CallEnd;

  constructor(
    private readonly session: Http2SessionManager,
    private readonly stream: http2.ClientHttp2Stream,
    private readonly schema: O,
    timeoutMs: number | undefined,
    signal: AbortSignal | undefined,
  ) {
    this.#answers = new PushedMessages((left) => {
      if (left < READ_AHEAD / 2 && stream.isPaused()) stream.resume();
    });
    this.#end = new CallEnd(timeoutMs, signal, (error) => this.fail(error));
    if (signal?.aborted) this.fail(ConnectError.from(signal.reason, Code.Canceled));
    stream.on('response', (received) => (this.responseHeaders = received));
    stream.on('trailers', (received) => (this.trailers = received));
    stream.on('data', (chunk: Buffer) => this.#read(chunk));
    stream.on('error', (error) => this.fail(new ConnectError(PEER_LOST, Code.Unavailable, undefined, undefined, error)));
    stream.on('close', () => this.#closed());
  }

  /** Whether the call is over (its status is known). */
  get settled(): boolean {
    return this.#end.settled;
  }

  /** Ends the call with `error` (the stream is cancelled); answers already read are still taken first. */
  fail(error: ConnectError): void {
    this.#end.settle(() => {
      if (!this.stream.closed && !this.stream.destroyed) this.stream.close(CANCEL);
      this.#answers.close(error);
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<MessageShape<O>> {
    return this.#answers[Symbol.asyncIterator]();
  }

  #read(chunk: Buffer): void {
    this.session.notifyResponseByteRead(this.stream);
    let pending: Buffer = this.#pending.byteLength === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    while (pending.byteLength >= 5) {
      const length = pending.readUInt32BE(1);
      if (pending.byteLength < 5 + length) break;
      if (pending[0] !== 0) return this.fail(new ConnectError('the peer answered a compressed message it was not offered', Code.Internal));
      try {
        this.#answers.push(fromBinary(this.schema, pending.subarray(5, 5 + length)));
      } catch (error) {
        return this.fail(new ConnectError('the peer answered a message that does not decode', Code.Internal, undefined, undefined, error));
      }
      pending = pending.subarray(5 + length);
    }
    this.#pending = pending;
    if (this.#answers.waiting >= READ_AHEAD) this.stream.pause();
  }

  #closed(): void {
    this.#end.settle(() => {
      const failure = answerFailure(this.responseHeaders, this.trailers);
      this.#answers.close(failure === undefined && this.#pending.byteLength > 0 ? new ConnectError('the peer ended the stream inside a message', Code.Internal) : failure);
    });
  }
}

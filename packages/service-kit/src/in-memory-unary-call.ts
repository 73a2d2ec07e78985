import { create, fromBinary, toBinary, type DescMessage, type DescMethodUnary, type MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, type ContextValues, type Interceptor, type UnaryRequest, type UnaryResponse } from '@connectrpc/connect';
import type { UnarySpec } from './binary-grpc-call.js';
import { CALL_ENDED, callAbortKey } from './call-abort.js';
import type { SignalRelay } from './signal-relay.js';
import { ServedUnaryCall, chainOf, type Chain } from './served-unary-call.js';

/** What {@link inMemoryUnaryServer} needs besides the methods. */
export interface InMemoryUnaryOptions {
  readonly interceptors: readonly Interceptor[];
  /** The server's hard stop: a call that made its signal listens to it until it ends. */
  readonly shutdown?: SignalRelay;
  /** The context values every call starts with. */
  readonly contextValues: () => ContextValues;
}

/** How a caller of this process describes its call. */
export interface InMemoryCall {
  /** Header fields (authorization, x-request-id, traceparent). */
  readonly header: Record<string, string>;
  readonly timeoutMs: number | undefined;
  readonly signal: AbortSignal | undefined;
}

/**
 * Answers a unary call of a caller in this process, or undefined for a
 * method it does not serve this way (the caller then goes through
 * Connect's handlers).
 */
export type InMemoryUnaryServer = <I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  input: MessageInitShape<I>,
  call: InMemoryCall,
) => Promise<UnaryResponse<I, O>> | undefined;

/**
 * The unary methods of a server, for callers in its own process (the one
 * process: the front services calling state): each call runs the
 * method's interceptor chain, the same one `unaryStreamServer` runs for a
 * binary gRPC call, with the caller's header fields, deadline and
 * cancellation, but no socket, HTTP/2 frame, envelope or Connect protocol.
 * The request and the answer are copied through their binary encoding,
 * so neither side holds an object the other could change, and an error
 * reaches the caller as it would over the wire: its code, message,
 * metadata and details, never its cause.
 */
export function inMemoryUnaryServer(methods: ReadonlyMap<string, UnarySpec>, options: InMemoryUnaryOptions): InMemoryUnaryServer {
  const chains = new Map([...methods].map(([path, spec]) => [path, { spec, chain: chainOf(spec, options.interceptors) }]));
  return <I extends DescMessage, O extends DescMessage>(method: DescMethodUnary<I, O>, input: MessageInitShape<I>, call: InMemoryCall) => {
    const served = chains.get(`/${method.parent.typeName}/${method.name}`);
    if (!served) return undefined;
    const message = fromBinary(method.input, toBinary(method.input, create(method.input, input)));
    return new InMemoryUnaryCall(served.spec, options, call).run(served.chain, message, method.output) as Promise<UnaryResponse<I, O>>;
  };
}

/** One call, from its request to its answer. */
class InMemoryUnaryCall extends ServedUnaryCall {
  readonly #call: InMemoryCall;
  readonly #values: ContextValues;

  constructor(spec: UnarySpec, options: InMemoryUnaryOptions, call: InMemoryCall) {
    super(spec, options.shutdown);
    this.#call = call;
    this.#values = options.contextValues();
    this.deadlineAt = call.timeoutMs === undefined ? undefined : Date.now() + call.timeoutMs;
  }

  /** Runs the call; its answer reaches the caller decoded as `answerSchema` (the caller's view of the output, which may keep parts encoded). */
  async run(chain: Chain, message: unknown, answerSchema: DescMessage): Promise<UnaryResponse> {
    const { signal, timeoutMs } = this.#call;
    if (signal?.aborted) throw ConnectError.from(signal.reason, Code.Canceled);
    this.#values.set(callAbortKey, this.abortState());
    this.beginChain(this.#values);
    const call = this;
    const method = this.spec.method;
    const request: UnaryRequest = {
      stream: false,
      service: method.parent,
      method: method as UnaryRequest['method'],
      requestMethod: 'POST',
      url: `in-process:/${method.parent.typeName}/${method.name}`,
      get signal() {
        return call.signal();
      },
      header: new Headers(this.#call.header),
      contextValues: this.#values,
      message: message as UnaryRequest['message'],
    };
    // The caller stops waiting at its deadline or when it cancels, as it would on the wire; the call's signal tells the handler.
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const givenUp = new Promise<never>((_, reject) => {
      const giveUp = (reason: ConnectError): void => {
        this.abort(reason);
        reject(reason);
      };
      if (timeoutMs !== undefined) timer = setTimeout(() => giveUp(new ConnectError('the deadline passed', Code.DeadlineExceeded)), timeoutMs);
      onAbort = () => giveUp(ConnectError.from(signal?.reason, Code.Canceled));
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const answer = await Promise.race([chain(request), givenUp]);
      // Its header and trailer may be getters of the answer's class, which a spread does not copy.
      const message = fromBinary(answerSchema, toBinary(method.output, answer.message as never));
      return { ...answer, header: answer.header, trailer: answer.trailer, message } as UnaryResponse;
    } catch (error) {
      throw asReceived(error);
    } finally {
      clearTimeout(timer);
      if (onAbort) signal?.removeEventListener('abort', onAbort);
      this.abort(CALL_ENDED);
      this.endChain(this.#values);
    }
  }
}

/** A failure as a caller over the wire would receive it: code, message, metadata and details, no cause. */
function asReceived(error: unknown): ConnectError {
  if (!(error instanceof ConnectError)) return new ConnectError('internal error', Code.Internal);
  const received = new ConnectError(error.rawMessage, error.code, error.metadata);
  received.details = error.details;
  return received;
}

import { create, isMessage } from '@bufbuild/protobuf';
import { createContextKey, type ContextValues, type HandlerContext, type Interceptor, type UnaryRequest, type UnaryResponse } from '@connectrpc/connect';
import type { UnarySpec } from './binary-grpc-call.js';
import type { SignalRelay } from './signal-relay.js';
import { CallAbort, type CallAbortState } from './call-abort.js';

/** A unary method's interceptors around its implementation, as one function. */
export type Chain = (req: UnaryRequest) => Promise<UnaryResponse>;

/**
 * Where the innermost step of a chain finds its call: a context value of
 * the request, set by the call as it enters the chain (a property of the
 * call's own context values, not an entry of a weak map, which the
 * collector would have to trace for every call).
 */
const currentCall = createContextKey<ServedUnaryCall | undefined>(undefined, { description: 'docket served unary call' });

/** The interceptors around the implementation, outermost first, built once per method. */
export function chainOf(spec: UnarySpec, interceptors: readonly Interceptor[]): Chain {
  const output = spec.method.output;
  const impl = spec.impl as (message: unknown, context: HandlerContext) => Promise<unknown>;
  const innermost: Chain = async (req) => {
    const call = req.contextValues.get(currentCall) as ServedUnaryCall;
    const answer = await impl(req.message, call.handlerContext(req));
    return call.response(isMessage(answer, output) ? answer : create(output, answer as never));
  };
  return interceptors.reduceRight<Chain>((next, interceptor) => interceptor(next as never) as unknown as Chain, innermost);
}

/**
 * One unary call a {@link Chain} serves, however it arrived (a binary gRPC
 * stream, a caller in this process): what the chain's innermost step asks
 * of it (the handler's context, the answer with the call's headers and
 * trailers), and its life: its deadline, its abort, and an AbortSignal
 * made only when something asks for one.
 */
export abstract class ServedUnaryCall {
  protected readonly spec: UnarySpec;
  readonly #abort: CallAbort;
  protected responseHeader: Headers | undefined;
  protected responseTrailer: Headers | undefined;

  constructor(spec: UnarySpec, shutdown: SignalRelay | undefined) {
    this.spec = spec;
    this.#abort = new CallAbort(shutdown);
  }

  /** When the deadline passes (ms since the epoch), if the caller set one. */
  protected get deadlineAt(): number | undefined {
    return this.#abort.deadlineAt;
  }

  protected set deadlineAt(at: number | undefined) {
    this.#abort.deadlineAt = at;
  }

  /** Has the chain's innermost step find this call through `values`, until {@link endChain}. */
  protected beginChain(values: ContextValues): void {
    values.set(currentCall, this);
  }

  protected endChain(values: ContextValues): void {
    // Unset rather than deleted: a deleted property turns the values object into a slow dictionary.
    values.set(currentCall, undefined);
  }

  /** The context the implementation sees, as the chain passed the request on. */
  handlerContext(req: UnaryRequest): HandlerContext {
    return new CallContext(this, this.spec.method, req);
  }

  /** Milliseconds until the call's deadline; undefined without one. */
  remainingMs(): number | undefined {
    return this.deadlineAt === undefined ? undefined : this.deadlineAt - Date.now();
  }

  /** The chain's answer to a request: the implementation's message, with this call's headers and trailers. */
  response(message: UnaryResponse['message']): UnaryResponse {
    return new OwnResponse(this, this.spec.method, message);
  }

  /** Whether the call was aborted (its deadline passed, its caller left, the server stopped it, it ended). */
  protected isAborted(): boolean {
    return this.#abort.isAborted();
  }

  protected abort(reason: unknown): void {
    this.#abort.abort(reason);
  }

  /** The call's AbortSignal, made on first ask: it aborts at the deadline, when the caller leaves, at the hard stop and when the call ends. */
  protected signal(): AbortSignal {
    return this.#abort.signal();
  }

  /** Calls `listener` when the call aborts, without making the signal ({@link CallAbort.listen}). */
  protected listenForAbort(listener: (reason: unknown) => void): () => void {
    return this.#abort.listen(listener);
  }

  /** What {@link callAbortKey} holds for this call. */
  protected abortState(): CallAbortState {
    return this.#abort.state();
  }

  /** The call's response headers, made when first asked for. */
  responseHeaders(): Headers {
    return (this.responseHeader ??= new Headers());
  }

  /** The call's response trailers, made when first asked for. */
  responseTrailers(): Headers {
    return (this.responseTrailer ??= new Headers());
  }
}

/** A call's handler context: the request's fields as the chain passed it on, the call's headers made only when asked for. */
class CallContext implements HandlerContext {
  readonly requestMethod = 'POST';
  readonly protocolName = 'grpc';
  readonly method: HandlerContext['method'];
  readonly service: HandlerContext['service'];
  readonly url: string;
  readonly values: HandlerContext['values'];
  readonly #call: ServedUnaryCall;
  readonly #req: UnaryRequest;
  /** A property, not a method: a handler may take it out of the context. */
  readonly timeoutMs = (): number | undefined => this.#call.remainingMs();

  constructor(call: ServedUnaryCall, method: UnarySpec['method'], req: UnaryRequest) {
    this.#call = call;
    this.#req = req;
    this.method = method;
    this.service = req.service;
    this.url = req.url;
    this.values = req.contextValues;
  }

  get signal(): AbortSignal {
    return this.#req.signal;
  }

  get requestHeader(): Headers {
    return this.#req.header;
  }

  get responseHeader(): Headers {
    return this.#call.responseHeaders();
  }

  get responseTrailer(): Headers {
    return this.#call.responseTrailers();
  }
}

/** An answer a call made itself: its headers and trailers are the call's own, made only when asked for. */
class OwnResponse implements UnaryResponse {
  readonly stream = false;
  readonly service: UnaryResponse['service'];
  readonly method: UnaryResponse['method'];
  readonly #call: ServedUnaryCall;

  constructor(
    call: ServedUnaryCall,
    method: UnarySpec['method'],
    readonly message: UnaryResponse['message'],
  ) {
    this.#call = call;
    this.service = method.parent;
    this.method = method as UnaryResponse['method'];
  }

  get header(): Headers {
    return this.#call.responseHeaders();
  }

  get trailer(): Headers {
    return this.#call.responseTrailers();
  }
}

/** Whether `answer` is a call's own (see {@link ServedUnaryCall.response}), not one an interceptor made. */
export function isOwnResponse(answer: UnaryResponse): boolean {
  return answer instanceof OwnResponse;
}

import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type CallOptions, type Client } from '@connectrpc/connect';
import {
  WorkRequestSchema,
  type ExecutionService,
  type WorkRequest,
  type WorkResponse,
} from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { failureOfStatus, PushedMessages } from '@docket/client-kit';

/** The calls a worker session carries: every attempt-scoped call and ClaimJobs. */
export type SessionCallName = Exclude<WorkRequest['call']['case'], 'cancel' | undefined>;

/** The calls of {@link Client<typeof ExecutionService>} that go through the session. */
const SESSION_CALLS: readonly SessionCallName[] = [
  'claimJobs',
  'renewAttempt',
  'reportProgress',
  'saveCheckpoint',
  'appendEvents',
  'ackSignals',
  'requestApproval',
  'reportOutcome',
  'beginEffect',
  'advanceEffect',
  'listRecoverableEffects',
];

/** The codes a service ends a Work stream with on purpose (see the proto comment of Work). */
const SESSION_REFUSALS: ReadonlySet<Code> = new Set([Code.Unauthenticated, Code.PermissionDenied, Code.InvalidArgument, Code.Unimplemented]);

/**
 * What a failed stream means for the calls it left unanswered: the
 * service's refusal of the session as it is, anything else (a reset
 * stream, which connect-node reports as ABORTED or CANCELLED, a closed
 * connection, a lost server) UNAVAILABLE: the calls may have been applied
 * and are sent again with their operation ids.
 */
function streamFailure(error: unknown): ConnectError {
  const failure = ConnectError.from(error, Code.Unavailable);
  if (SESSION_REFUSALS.has(failure.code)) return failure;
  return new ConnectError(`the worker session was lost (${Code[failure.code]})`, Code.Unavailable);
}

/** A call sent on the stream and not yet answered. */
interface PendingCall {
  readonly request: WorkRequest;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
}

/** One Work stream and the calls on it. */
interface OpenStream {
  readonly requests: PushedMessages<WorkRequest>;
  readonly pending: Map<bigint, PendingCall>;
  readonly abort: AbortController;
}

/**
 * An {@link Client<typeof ExecutionService>} whose claims and attempt-scoped calls travel
 * as calls of one ExecutionService/Work stream (the worker session)
 * instead of a unary RPC each; RegisterWorker goes unary. Every method
 * keeps its unary contract: the same request, the same response, the same
 * error (code, reason and details, rebuilt from the answer's
 * `google.rpc.Status`), the call's `timeoutMs` sent as its deadline and
 * enforced here too, and its `signal` withdrawing it (the service is told).
 *
 * The stream is opened by the first call and again by the first call after
 * it ended. When the service ends it in order (drain, or its longest
 * session age), it has answered every call it read, so the calls left
 * unanswered never ran: they are sent again, unchanged, on a new stream.
 * When the stream fails, its unanswered calls fail with its error
 * (UNAVAILABLE when the connection dropped), and the SDK's retries send
 * them again with their operation ids. A service without Work
 * (UNIMPLEMENTED) is served unary from then on, those calls included.
 */
export class WorkSessionClient {
  readonly #unary: Client<typeof ExecutionService>;
  #stream: OpenStream | undefined;
  #nextCallId = 1n;
  #unimplemented = false;
  #closed = false;
  /** The client to hand the SDK. */
  readonly client: Client<typeof ExecutionService>;

  constructor(unary: Client<typeof ExecutionService>) {
    this.#unary = unary;
    const client: Record<string, unknown> = { ...unary };
    for (const name of SESSION_CALLS) {
      client[name] = (request: unknown, options?: CallOptions) => this.#call(name, request, options);
    }
    this.client = client as unknown as Client<typeof ExecutionService>;
  }

  /** Ends the stream (half-close) and refuses further calls. */
  close(): void {
    this.#closed = true;
    const stream = this.#stream;
    this.#stream = undefined;
    stream?.requests.close();
  }

  #call(name: SessionCallName, request: unknown, options: CallOptions | undefined): Promise<unknown> {
    if (this.#unimplemented) return this.#unaryCall(name, request, options);
    if (this.#closed) return Promise.reject(new ConnectError('the worker session is closed', Code.Canceled));
    if (options?.signal?.aborted) return Promise.reject(ConnectError.from(options.signal.reason, Code.Canceled));
    const callId = this.#nextCallId++;
    const message = create(WorkRequestSchema, {
      callId,
      call: { case: name, value: request } as MessageInitShape<typeof WorkRequestSchema>['call'],
      ...(options?.timeoutMs === undefined ? {} : { timeout: durationFromMs(options.timeoutMs) }),
    });
    return new Promise((resolve, reject) => {
      const signal = options?.signal;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const withdraw = (error: ConnectError): void => {
        const stream = this.#stream;
        if (stream?.pending.delete(callId)) {
          stream.requests.push(create(WorkRequestSchema, { callId, call: { case: 'cancel', value: {} } }));
        }
        settle(() => reject(error));
      };
      const onAbort = (): void => withdraw(ConnectError.from(signal!.reason, Code.Canceled));
      const settle = (finish: () => void): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        finish();
      };
      if (options?.timeoutMs !== undefined) {
        timer = setTimeout(() => withdraw(new ConnectError('the deadline passed', Code.DeadlineExceeded)), options.timeoutMs);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#send({
        request: message,
        resolve: (value) => settle(() => resolve(value)),
        reject: (error) => settle(() => reject(error)),
      });
    });
  }

  #send(call: PendingCall): void {
    if (this.#closed && !this.#unimplemented) {
      call.reject(new ConnectError('the worker session is closed', Code.Canceled));
      return;
    }
    if (this.#unimplemented) {
      const { case: name, value } = call.request.call as { case: SessionCallName; value: unknown };
      this.#unaryCall(name, value, undefined).then(call.resolve, call.reject);
      return;
    }
    const stream = (this.#stream ??= this.#open());
    stream.pending.set(call.request.callId, call);
    stream.requests.push(call.request);
  }

  #open(): OpenStream {
    const stream: OpenStream = { requests: new PushedMessages<WorkRequest>(), pending: new Map(), abort: new AbortController() };
    void this.#serve(stream);
    return stream;
  }

  /** Reads the stream's answers until it ends, then settles or resends what it left unanswered. */
  async #serve(stream: OpenStream): Promise<void> {
    let failure: ConnectError | undefined;
    try {
      for await (const answer of this.#unary.work(stream.requests, { signal: stream.abort.signal })) this.#answer(stream, answer);
    } catch (error) {
      failure = streamFailure(error);
      stream.abort.abort(failure);
    }
    if (this.#stream === stream) this.#stream = undefined;
    stream.requests.close();
    const left = [...stream.pending.values()];
    stream.pending.clear();
    if (failure?.code === Code.Unimplemented) this.#unimplemented = true;
    for (const call of left) {
      if (failure === undefined || failure.code === Code.Unimplemented) this.#send(call);
      else call.reject(failure);
    }
  }

  #answer(stream: OpenStream, answer: WorkResponse): void {
    const call = stream.pending.get(answer.callId);
    if (!call) return; // withdrawn by its caller (timeout or signal): nobody waits for it
    stream.pending.delete(answer.callId);
    const result = answer.result;
    if (result.case === 'error') call.reject(failureOfStatus(result.value));
    else if (result.case === call.request.call.case) call.resolve(result.value);
    else call.reject(new ConnectError('the worker session answered a call with another kind of response', Code.Internal));
  }

  #unaryCall(name: SessionCallName, request: unknown, options: CallOptions | undefined): Promise<unknown> {
    const method = this.#unary[name] as (request: unknown, options?: CallOptions) => Promise<unknown>;
    return method(request, options);
  }
}

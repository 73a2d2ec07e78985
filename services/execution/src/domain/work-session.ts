import { create } from '@bufbuild/protobuf';
import { durationMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError } from '@connectrpc/connect';
import { invalidField } from '@docket/contracts';
import { WorkResponseSchema, type WorkRequest, type WorkResponse } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { CALL_ENDED, CallAbort, statusOfFailure, type ForwardedDeadline, type Logger } from '@docket/service-kit';
import { claimJobs, type ClaimDependencies } from './claim-jobs.js';
import { workAnswer } from './work-answers.js';
import { callWorkerRpc, type WorkerCall } from './worker-call.js';

/**
 * Unanswered calls one session holds: the session reads the stream's next
 * call only once fewer are in flight (the proto comment of Work names it).
 */
export const WORK_SESSION_CALLS = 1_024;

/** What a worker session needs. */
export interface WorkSessionDependencies extends ClaimDependencies {
  readonly logger: Logger;
  /** How long a session lasts at most before it ends as on drain (`ExecutionConfig.workSessionMaxAgeMs`). */
  readonly maxAgeMs: number;
}

/** The stream a session runs in. */
export interface WorkSessionCall {
  /** Aborts when the worker goes away or the stream's deadline passes. */
  readonly signal: AbortSignal;
  /** Aborts when the server starts draining. */
  readonly drain: AbortSignal;
  /** The stream's deadline and request id as they stand now. */
  readonly forward: () => ForwardedDeadline;
  /** Whether the stream writes its answers as encoded frames (binary gRPC: `writesEncodedFrames`). */
  readonly encodedFrames: boolean;
}


/**
 * ExecutionService/Work: each call read from the stream runs as the unary
 * RPC of its kind would (a claim through {@link claimJobs}, with its
 * long-poll; every other call through the state service's HandleWorkerCall,
 * which the process batches), concurrently, and is answered as soon as it
 * finishes, with its response or the `google.rpc.Status` the unary RPC
 * would have failed with.
 *
 * At most {@link WORK_SESSION_CALLS} calls are open at once; beyond
 * that the session reads no further and HTTP/2 flow control holds the
 * worker back. When the server drains or the session reaches `maxAgeMs`,
 * it stops reading, answers every call it read (waiting claims at once,
 * with what they hold, as ClaimJobs does on drain) and ends with OK; the
 * worker sends what was left unanswered again on a new session. When the worker
 * goes away, every open call is withdrawn.
 */
export async function* workSession(
  deps: WorkSessionDependencies,
  subject: string,
  requests: AsyncIterable<WorkRequest>,
  call: WorkSessionCall,
): AsyncGenerator<WorkResponse> {
  /** The calls read and not yet answered, each with its abort (deadline, cancel, the session's end). */
  const open = new Map<bigint, CallAbort>();
  const answers: WorkResponse[] = [];
  let reading = true;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = (): void => {
    const waiting = wake;
    wake = undefined;
    waiting?.();
  };
  const ending = new AbortController();
  const end = (): void => {
    ending.abort();
    notify();
  };
  let roomFreed: (() => void) | undefined;
  const ageTimer = setTimeout(end, deps.maxAgeMs);
  const onGone = (): void => {
    failure ??= ConnectError.from(call.signal.reason, Code.Canceled);
    for (const abort of open.values()) abort.abort(call.signal.reason);
    notify();
  };
  call.drain.addEventListener('abort', end, { once: true });
  call.signal.addEventListener('abort', onGone, { once: true });
  if (call.drain.aborted) end();
  if (call.signal.aborted) onGone();

  const answer = (callId: bigint, response: WorkResponse): void => {
    open.get(callId)?.abort(CALL_ENDED);
    open.delete(callId);
    answers.push(response);
    const free = roomFreed;
    roomFreed = undefined;
    free?.();
    notify();
  };

  const start = (request: WorkRequest): void => {
    const { callId } = request;
    const work = request.call;
    if (work.case === 'cancel') {
      open.get(callId)?.abort(new ConnectError('the worker cancelled the call', Code.Canceled));
      return;
    }
    if (callId === 0n || open.has(callId)) {
      throw invalidField('call_id', callId === 0n ? 'must not be 0' : 'is already unanswered on this stream');
    }
    const refuse = (error: unknown, rpc?: string): void =>
      answer(callId, create(WorkResponseSchema, { callId, result: { case: 'error', value: statusOfFailure(error, deps.logger, rpc === undefined ? undefined : { rpc }) } }));
    if (work.case === undefined) {
      refuse(invalidField('call', 'must name a call'));
      return;
    }
    const stream = call.forward();
    let timeoutMs = stream.timeoutMs;
    if (request.timeout) {
      const { seconds, nanos } = request.timeout;
      if (seconds < 0n || nanos < 0 || nanos > 999_999_999) {
        refuse(invalidField('timeout', 'must be a non-negative duration'));
        return;
      }
      timeoutMs = Math.min(timeoutMs ?? Number.POSITIVE_INFINITY, durationMs(request.timeout));
    }
    // Its deadline's timer and its AbortSignal are made only for whoever waits on them.
    const abort = new CallAbort();
    if (timeoutMs !== undefined) abort.deadlineAt = Date.now() + timeoutMs;
    open.set(callId, abort);
    const { headers } = stream;
    const forward = (): ForwardedDeadline => ({
      get signal() {
        return abort.signal();
      },
      listenForAbort: (listener) => abort.listen(listener),
      ...(abort.deadlineAt === undefined ? {} : { timeoutMs: Math.max(0, abort.deadlineAt - Date.now()) }),
      ...(headers ? { headers } : {}),
    });
    const running: Promise<Uint8Array> =
      work.case === 'claimJobs'
        ? claimJobs(deps, subject, work.value, {
            get signal() {
              return abort.signal();
            },
            drain: ending.signal,
            forward,
          })
        : callWorkerRpc(deps.state, subject, work as WorkerCall, forward()).then(({ encoded }) => encoded);
    running
      .then((encoded) => workAnswer(callId, work.case, encoded, call.encodedFrames))
      .then(
        (response) => answer(callId, response),
        (error: unknown) => refuse(error, `Work/${work.case}`),
      );
  };

  const read = async (): Promise<void> => {
    const iterator = requests[Symbol.asyncIterator]();
    const ended = new Promise<'ended'>((resolve) => ending.signal.addEventListener('abort', () => resolve('ended'), { once: true }));
    try {
      for (;;) {
        while (open.size >= WORK_SESSION_CALLS && !ending.signal.aborted) {
          await Promise.race([new Promise<void>((resolve) => (roomFreed = resolve)), ended]);
        }
        if (ending.signal.aborted) return;
        const nextRequest = iterator.next();
        const next = await Promise.race([nextRequest, ended]);
        if (next === 'ended') {
          // The session ends without this read: whatever it brings (a call
          // the worker sends again elsewhere, or the stream's end) is moot.
          nextRequest.catch(() => undefined);
          return;
        }
        if (next.done) return;
        start(next.value);
      }
    } catch (error) {
      failure = error;
    } finally {
      reading = false;
      notify();
    }
  };
  const reader = read();

  try {
    for (;;) {
      while (answers.length > 0) yield answers.shift()!;
      if ((!reading && open.size === 0) || failure !== undefined) break;
      await new Promise<void>((resolve) => (wake = resolve));
    }
    if (failure !== undefined) throw failure;
    await reader;
  } finally {
    clearTimeout(ageTimer);
    call.drain.removeEventListener('abort', end);
    call.signal.removeEventListener('abort', onGone);
    for (const abort of open.values()) abort.abort(new ConnectError('the session ended', Code.Canceled));
    open.clear();
  }
}

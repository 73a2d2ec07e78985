import { create, fromBinary, type DescMethodUnary } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient, type CallOptions, type Client, type Transport } from '@connectrpc/connect';
import type { Status } from '@docket/proto/google/rpc/status_pb.js';
import {
  AdmitJobResponseSchema,
  AdmitJobsAnswerSchema,
  HandleWorkerCallResponseSchema,
  HandleWorkerCallsAnswerSchema,
  StateService,
  type AdmitJobRequest,
  type AdmitJobsRequestSchema,
  type HandleWorkerCallAnswer,
  type HandleWorkerCallRequest,
  type HandleWorkerCallResponse,
  type HandleWorkerCallsRequestSchema,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import { abortListenerOfSignal, answeredWithin, failureOfStatus, type AbortListener, type CallerWait } from '@docket/client-kit';
import { RequestBatcher, type BatchBudget, type ItemOutcome, type SubmitOptions } from './request-batcher.js';
import type { ForwardedDeadline } from './deadline.js';

/** How a front service coalesces its calls to the state service. */
export interface StateBatchOptions {
  /** Items per AdmitJobs / HandleWorkerCalls call (at most 256). */
  readonly maxBatch: number;
  /** Batched calls in flight at once, per kind. */
  readonly maxInFlight: number;
  /** A batched call's deadline when some caller set none, and its longest (default 30 s). */
  readonly callTimeoutMs?: number;
}

/** The default longest a batched call may take, and its deadline when some caller set none. */
const BATCH_TIMEOUT_MS = 30_000;

/** The deadline of a batched call: the latest of its callers', at most `longestMs`. */
function batchTimeoutMs(budget: BatchBudget, longestMs: number): number {
  return Math.max(1, Math.min(longestMs, budget.timeoutMs ?? longestMs));
}

/** The state client a front service uses ({@link batchingStateClient}). */
export type BatchingStateClient = Client<typeof StateService> & {
  /**
   * AdmitJob, answered with the AdmitJobResponse's bytes (which are also
   * a SubmitJobResponse's), not decoded: the admission service passes them
   * on to its caller as they are.
   */
  admitJobAnswer(request: AdmitJobRequest, options?: CallOptions): Promise<Uint8Array>;
  /**
   * HandleWorkerCall, answered with the public response's bytes, not
   * decoded: the execution service passes them on to the worker as they are.
   */
  workerCallAnswer(request: HandleWorkerCallRequest, options?: CallOptions): Promise<HandleWorkerCallAnswer>;
};

/** AdmitJobs, its answer read as `AdmitJobsAnswer`: each decided admission left encoded. */
const ADMIT_JOBS_ANSWER: DescMethodUnary<typeof AdmitJobsRequestSchema, typeof AdmitJobsAnswerSchema> = {
  ...StateService.method.admitJobs,
  output: AdmitJobsAnswerSchema,
};

/** HandleWorkerCalls, its answer read as `HandleWorkerCallsAnswer`: each call's public response left encoded. */
const HANDLE_WORKER_CALLS_ANSWER: DescMethodUnary<typeof HandleWorkerCallsRequestSchema, typeof HandleWorkerCallsAnswerSchema> = {
  ...StateService.method.handleWorkerCalls,
  output: HandleWorkerCallsAnswerSchema,
};

/**
 * The state client a front service uses, with its two hot calls coalesced:
 * AdmitJob calls that arrive while earlier ones are in flight travel
 * together as one AdmitJobs call, HandleWorkerCall calls as one
 * HandleWorkerCalls call (see {@link RequestBatcher}: nothing waits for a
 * batch to fill). Every item gets the answer, or the error (code, message,
 * ErrorInfo and BadRequest details), that the unary call would have given;
 * an item whose caller's deadline passed while it waited for its batch is
 * never sent, and a batched call's deadline is the latest of its callers';
 * a caller whose own deadline passes or who cancels stops waiting at once
 * (the item may still be decided: every such call is idempotent by key or
 * operation id). Every other RPC passes through unchanged.
 */
export function batchingStateClient(transport: Transport, options: StateBatchOptions): BatchingStateClient {
  const client = createClient(StateService, transport);
  const longestMs = options.callTimeoutMs ?? BATCH_TIMEOUT_MS;
  const admissions = new RequestBatcher<AdmitJobRequest, Uint8Array>(
    async (requests, budget) =>
      (await transport.unary(ADMIT_JOBS_ANSWER, undefined, batchTimeoutMs(budget, longestMs), undefined, { requests: [...requests] })).message.results.map((item) =>
        itemOutcome(item.result),
      ),
    options,
  );
  const admitJobAnswer = (request: AdmitJobRequest, callOptions?: CallOptions) => answeredWithin(admissions.submit(request, deadlineOf(callOptions)), callerWaitOf(callOptions));
  const workerCalls = new RequestBatcher<HandleWorkerCallRequest, HandleWorkerCallAnswer>(
    async (calls, budget) =>
      (await transport.unary(HANDLE_WORKER_CALLS_ANSWER, undefined, batchTimeoutMs(budget, longestMs), undefined, { calls: [...calls] })).message.results.map((item) =>
        itemOutcome(item.result),
      ),
    options,
  );
  const workerCallAnswer = (request: HandleWorkerCallRequest, callOptions?: CallOptions) =>
    answeredWithin(workerCalls.submit(request, deadlineOf(callOptions)), callerWaitOf(callOptions));
  return {
    ...client,
    admitJobAnswer,
    admitJob: async (request, callOptions) => fromBinary(AdmitJobResponseSchema, await admitJobAnswer(request as AdmitJobRequest, callOptions)),
    workerCallAnswer,
    handleWorkerCall: async (request, callOptions) => workerCallResponse(await workerCallAnswer(request as HandleWorkerCallRequest, callOptions)),
  } as BatchingStateClient;
}

/** The HandleWorkerCallResponse a HandleWorkerCallAnswer stands for: its public response decoded. */
function workerCallResponse(answer: HandleWorkerCallAnswer): HandleWorkerCallResponse {
  const { nextClaimableAt, claimQueues } = answer;
  const { case: name, value } = answer.response;
  if (name === undefined) return create(HandleWorkerCallResponseSchema, { nextClaimableAt, claimQueues });
  const field = HandleWorkerCallResponseSchema.field[name];
  if (field?.fieldKind !== 'message') throw new ConnectError(`the state service answered a worker call with an unknown response ${name}`, Code.Internal);
  return create(HandleWorkerCallResponseSchema, {
    response: { case: name, value: fromBinary(field.message, value) } as HandleWorkerCallResponse['response'],
    nextClaimableAt,
    claimQueues,
  });
}

function callerWaitOf(callOptions: CallOptions | undefined): CallerWait {
  return { timeoutMs: callOptions?.timeoutMs, listenForAbort: abortListenerOf(callOptions) };
}

function deadlineOf(callOptions: CallOptions | undefined): SubmitOptions {
  return callOptions?.timeoutMs === undefined ? {} : { timeoutMs: callOptions.timeoutMs };
}

function itemOutcome<Response>(result: { case: 'response'; value: Response } | { case: 'error'; value: Status } | { case: undefined; value?: undefined }): ItemOutcome<Response> {
  if (result.case === 'response') return { ok: true, value: result.value };
  if (result.case === 'error') return { ok: false, error: failureOfStatus(result.value) };
  return { ok: false, error: new ConnectError('the state service answered a batched call without a result', Code.Internal) };
}

/**
 * How to hear that the caller gave up: a served call's own listener when
 * the options came from {@link forwardDeadline} (no AbortSignal is made),
 * else the options' signal.
 */
function abortListenerOf(callOptions: CallOptions | undefined): AbortListener | undefined {
  return (callOptions as Partial<ForwardedDeadline> | undefined)?.listenForAbort ?? abortListenerOfSignal(callOptions?.signal);
}

import { toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { knownEncoding } from '@docket/service-kit';
import type { AttemptRef } from '@docket/proto/docket/common/v1/attempt_pb.js';
import type { HandleWorkerCallRequest } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { JobRow } from '../db/queries/jobs.js';
import type { SignalRow } from '../db/queries/signals.js';
import type { WorkerOperationRow } from '../db/queries/worker-operations.js';
import type { EffectRow } from '../effects/effect-lifecycle.js';
import type { JobWriteSet } from '../transitions/job-write-set.js';
import type { ExecutionSettings } from '../workers/register-worker.js';
import { WORKER_OPERATION_TTL_MS, operationDigest } from './worker-operation.js';

/** The attempt-scoped worker RPCs that write, by their HandleWorkerCall case. */
export type AttemptReportCase =
  | 'renewAttempt'
  | 'reportProgress'
  | 'saveCheckpoint'
  | 'appendEvents'
  | 'reportOutcome'
  | 'ackSignals'
  | 'requestApproval'
  | 'beginEffect'
  | 'advanceEffect';

/** The request of one attempt-scoped call, by its case. */
export type ReportRequest<Case extends AttemptReportCase> = Extract<HandleWorkerCallRequest['request'], { case: Case }>['value'];

/**
 * What a batch read, after locking its jobs, for the calls that need more
 * than the job row: the outstanding signals of the jobs it renews (for
 * jobs that have any) and the effects the calls name.
 */
export interface ReportReads {
  readonly signals: ReadonlyMap<string, readonly SignalRow[]>;
  readonly effects: readonly EffectRow[];
}

/** The effects a call names, to be read with its batch. */
export interface EffectNeeds {
  readonly ids: readonly string[];
  readonly keys: readonly string[];
}

/**
 * One attempt-scoped worker call, checked and ready to decide: who calls,
 * the authority it claims, its operation id and digest, and `perform`, which
 * applies the call to the job (as this batch has left it, under the row
 * lock) by adding rows to the batch's write set, and returns the response.
 * `perform` is pure until it adds rows: a call it refuses writes nothing.
 */
export interface AttemptReport<Res extends DescMessage = DescMessage> {
  readonly case: AttemptReportCase;
  readonly subject: string;
  readonly rpc: string;
  readonly attempt: AttemptRef | undefined;
  readonly incarnation: string;
  readonly operationId: string;
  readonly digest: string;
  readonly responseSchema: Res;
  /** Effects to read before deciding (BeginEffect by key, AdvanceEffect by id). */
  readonly effects?: EffectNeeds;
  perform(job: JobRow, writes: JobWriteSet, now: Date, settings: ExecutionSettings, reads: ReportReads): MessageShape<Res>;
}

/** What names one attempt-scoped RPC: its case, its public name and its request and response messages. */
export interface ReportKind<Req extends DescMessage, Res extends DescMessage> {
  readonly case: AttemptReportCase;
  readonly rpc: string;
  readonly requestSchema: Req;
  readonly responseSchema: Res;
}

/** An {@link AttemptReport} of `kind` from a checked request and what performing it does. */
export function attemptReport<Req extends DescMessage, Res extends DescMessage>(
  subject: string,
  kind: ReportKind<Req, Res>,
  request: MessageShape<Req> & { operationId: string; attempt?: AttemptRef | undefined },
  perform: AttemptReport<Res>['perform'],
  effects?: EffectNeeds,
): AttemptReport<Res> {
  const incarnation = request.attempt?.workerIncarnation ?? '';
  return {
    ...(effects ? { effects } : {}),
    case: kind.case,
    subject,
    rpc: kind.rpc,
    attempt: request.attempt,
    incarnation,
    operationId: request.operationId,
    digest: operationDigest(kind.rpc, incarnation, kind.requestSchema, request),
    responseSchema: kind.responseSchema,
    perform,
  };
}

/**
 * Records a decided call's response with its effect, for replay by
 * operation id. The response is encoded once: the answer that carries it
 * writes the same bytes (`knownEncoding`).
 */
export function recordOperation<Res extends DescMessage>(
  writes: JobWriteSet,
  call: { readonly incarnation: string; readonly operationId: string; readonly rpc: string; readonly digest: string; readonly responseSchema: Res },
  response: MessageShape<Res>,
  now: Date,
): WorkerOperationRow {
  const encoded = toBinary(call.responseSchema, response);
  knownEncoding(response, encoded);
  const row: WorkerOperationRow = {
    worker_incarnation: call.incarnation,
    operation_id: call.operationId,
    rpc: call.rpc,
    request_digest: call.digest,
    response: Buffer.from(encoded.buffer, encoded.byteOffset, encoded.byteLength),
    created_at: now,
    expires_at: new Date(now.getTime() + WORKER_OPERATION_TTL_MS),
  };
  writes.operations.push(row);
  return row;
}

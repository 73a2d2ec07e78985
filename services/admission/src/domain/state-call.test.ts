import { create } from '@bufbuild/protobuf';
import type { Principal } from '@docket/auth';
import { newId } from '@docket/contracts';
import { CreateScheduleRequestSchema, RetryJobsRequestSchema, SendSignalRequestSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { HandleBulkCallRequest, HandleOwnerCallRequest, HandleScheduleCallRequest } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { describe, expect, it } from 'vitest';
import type { AdmissionDependencies } from './admission.js';
import { startBulkOperation } from './bulk-operations.js';
import { forwardOwnerCall } from './owner-call.js';
import { mutateSchedule } from './schedules.js';

const KEY = 'key-0123456789abcdef';
const USER: Principal = { subject: 'alice', role: 'user' };
const ADMIN: Principal = { subject: 'root', role: 'admin' };
const CALL = { signal: new AbortController().signal };

type Sent = HandleOwnerCallRequest | HandleScheduleCallRequest | HandleBulkCallRequest;

/** Admission dependencies whose state service answers every Handle*Call with `answer` and records what it was sent. */
function stateAnswering(answer: { case: string; value: unknown }): { deps: AdmissionDependencies; sent: Sent[] } {
  const sent: Sent[] = [];
  const handle = async (request: Sent) => {
    sent.push(request);
    return { response: answer };
  };
  const state = { handleOwnerCall: handle, handleScheduleCall: handle, handleBulkCall: handle };
  return { deps: { state, idempotencyTtlMs: 86_400_000 } as unknown as AdmissionDependencies, sent };
}

/** The field of the field violation `promise` rejects with, or its reason when it has none. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  const error = (await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  )) as { reason?: string; fieldViolations?: readonly { field: string }[] } | undefined;
  if (error === undefined) throw new Error('no refusal');
  return error.fieldViolations?.[0]?.field ?? error.reason ?? 'unknown';
}

describe('idempotentCalls', () => {
  it('sends the call with its binding and answers the public response', async () => {
    const { deps, sent } = stateAnswering({ case: 'sendSignal', value: { replayed: true } });
    const jobId = newId('job');
    const request = create(SendSignalRequestSchema, { idempotencyKey: KEY, jobId, name: 'go' });
    expect(await forwardOwnerCall(deps, USER, 'sendSignal', request, CALL)).toEqual({ replayed: true });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({
      caller: { subject: 'alice' },
      operation: 'docket.admission.v1.AdmissionService/SendSignal',
      idempotencyKey: KEY,
      requestDigest: expect.stringMatching(/^[0-9a-f]{64}$/),
      idempotencyTtl: { seconds: 86_400n },
      request: { case: 'sendSignal', value: request },
    });
  });

  it('checks the caller first, then the key, then the rest, and sends nothing refused', async () => {
    const { deps, sent } = stateAnswering({ case: 'retryJobs', value: {} });
    const badKey = create(RetryJobsRequestSchema, { idempotencyKey: 'short' });
    expect(await refusal(startBulkOperation(deps, USER, 'retryJobs', badKey, CALL))).toBe('PERMISSION_DENIED');
    expect(await refusal(startBulkOperation(deps, ADMIN, 'retryJobs', badKey, CALL))).toBe('idempotency_key');
    const signal = (jobId: string, idempotencyKey: string) => create(SendSignalRequestSchema, { idempotencyKey, jobId, name: 'go' });
    expect(await refusal(forwardOwnerCall(deps, USER, 'sendSignal', signal('nope', 'short'), CALL))).toBe('idempotency_key');
    expect(await refusal(forwardOwnerCall(deps, USER, 'sendSignal', signal('nope', KEY), CALL))).toBe('job_id');
    const schedule = create(CreateScheduleRequestSchema, { idempotencyKey: KEY });
    expect(await refusal(mutateSchedule(deps, USER, 'createSchedule', schedule, CALL))).toBe('schedule');
    expect(sent).toEqual([]);
  });

  it('fails closed when the state service answers another call', async () => {
    const { deps } = stateAnswering({ case: 'decideApproval', value: {} });
    const request = create(SendSignalRequestSchema, { idempotencyKey: KEY, jobId: newId('job'), name: 'go' });
    expect(await refusal(forwardOwnerCall(deps, USER, 'sendSignal', request, CALL))).toBe('INTERNAL');
  });
});

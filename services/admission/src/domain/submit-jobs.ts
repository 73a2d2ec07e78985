import { setMaxListeners } from 'node:events';
import { create } from '@bufbuild/protobuf';
import { LIMITS, batchTooLarge, invalidField } from '@docket/contracts';
import type { Principal } from '@docket/auth';
import {
  SubmitJobRequestSchema,
  SubmitJobsResponseSchema,
  SubmitJobsResultSchema,
  type SubmitJobsRequest,
  type SubmitJobsResponse,
  type SubmitJobsResult,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { AdmitJobRequest } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { assertRequestWithinBounds, statusOfFailure, type ForwardedDeadline } from '@docket/service-kit';
import { admissionOf, submittedOf, type AdmissionDependencies } from './admission.js';

/** Node's default listener count per event, kept for the call's other listeners. */
const MAX_LISTENERS_DEFAULT = 10;
/** The RPC path an item's unexpected failure is logged under. */
const SUBMIT_JOBS_RPC = 'docket.admission.v1.AdmissionService/SubmitJobs';

/**
 * Admits 1 to 1,000 jobs (SPEC section 14), each exactly as SubmitJob
 * would: the item is checked alone (a bad item gets its own error, field
 * paths relative to it, and the others go on), and its admission carries
 * SubmitJob's operation, so a key bound by either RPC replays or conflicts
 * in the other.
 *
 * The valid items go to the state service together, through the batching
 * state client, so they travel as AdmitJobs calls and commit in the state
 * service's group commits. Items are decided in index order: an item whose
 * key an earlier item of the call already used waits for that item's
 * decision and is then decided against the binding it left (a replay, or
 * IDEMPOTENCY_CONFLICT when its digest differs), exactly as if it had been
 * sent after it. Each wave holds at most one item per key, so most calls
 * are one wave.
 */
export async function submitJobs(
  deps: AdmissionDependencies,
  principal: Principal,
  request: SubmitJobsRequest,
  call: ForwardedDeadline,
): Promise<SubmitJobsResponse> {
  if (request.items.length > LIMITS.submitJobsItems) throw batchTooLarge('submitJobsItems', 'items');
  if (request.items.length === 0) throw invalidField('items', `must hold 1 to ${LIMITS.submitJobsItems} jobs`);
  const results: SubmitJobsResult[] = new Array(request.items.length);
  const refused = (index: number, error: unknown): void => {
    results[index] = create(SubmitJobsResultSchema, { result: { case: 'error', value: statusOfFailure(error, deps.logger, { rpc: SUBMIT_JOBS_RPC }) } });
  };
  const admissions: { readonly index: number; readonly admission: AdmitJobRequest }[] = [];
  request.items.forEach((item, index) => {
    try {
      assertRequestWithinBounds(SubmitJobRequestSchema, item);
      admissions.push({ index, admission: admissionOf(deps, principal, item) });
    } catch (error) {
      refused(index, error);
    }
  });
  // Every item waiting for the state service listens to the call's signal (and stops listening when answered).
  setMaxListeners(admissions.length + MAX_LISTENERS_DEFAULT, call.signal);
  for (const wave of wavesByKey(admissions)) {
    await Promise.all(
      wave.map(async ({ index, admission }) => {
        try {
          results[index] = create(SubmitJobsResultSchema, { result: { case: 'submitted', value: submittedOf(await deps.state.admitJob(admission, call)) } });
        } catch (error) {
          refused(index, error);
        }
      }),
    );
  }
  return create(SubmitJobsResponseSchema, { results });
}

/**
 * Splits admissions into waves that each hold at most one item per
 * idempotency key, in index order: wave n holds the n-th item of every key.
 * Pure.
 */
export function wavesByKey<Item extends { readonly admission: { readonly idempotencyKey: string } }>(items: readonly Item[]): Item[][] {
  const waves: Item[][] = [];
  const seen = new Map<string, number>();
  for (const item of items) {
    const wave = seen.get(item.admission.idempotencyKey) ?? 0;
    seen.set(item.admission.idempotencyKey, wave + 1);
    (waves[wave] ??= []).push(item);
  }
  return waves;
}

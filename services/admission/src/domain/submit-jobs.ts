import { setMaxListeners } from 'node:events';
import { create } from '@bufbuild/protobuf';
import { DocketError, LIMITS, batchTooLarge, invalidField } from '@docket/contracts';
import type { Principal } from '@docket/auth';
import {
  SubmitJobRequestSchema,
  type SubmitJobRequest,
  type SubmitJobsRequest,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { AdmitJobRequest } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { assertRequestWithinBounds, statusOfFailure, type ForwardedDeadline } from '@docket/service-kit';
import { admissionOf, type AdmissionDependencies } from './admission.js';
import { submittedJobId, type SubmittedItem } from './submitted-answers.js';

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
 * service's group commits. An item that names earlier items as parents
 * (`depends_on_items`) goes after them, with the job ids they resolved to
 * (see `levelsOfParents`). Items are decided in index order: an item whose
 * key an earlier item of the call already used waits for that item's
 * decision and is then decided against the binding it left (a replay, or
 * IDEMPOTENCY_CONFLICT when its digest differs), exactly as if it had been
 * sent after it. Each wave holds at most one item per key, so most calls
 * are one wave. Answers each item's result in item order: its
 * SubmitJobResponse's bytes or its status (`submitJobsAnswer` makes the
 * call's answer of them).
 */
export async function submitJobs(
  deps: AdmissionDependencies,
  principal: Principal,
  request: SubmitJobsRequest,
  call: ForwardedDeadline,
): Promise<SubmittedItem[]> {
  if (request.items.length > LIMITS.submitJobsItems) throw batchTooLarge('submitJobsItems', 'items');
  if (request.items.length === 0) throw invalidField('items', `must hold 1 to ${LIMITS.submitJobsItems} jobs`);
  const results: SubmittedItem[] = new Array(request.items.length);
  const refused = (index: number, error: unknown): void => {
    results[index] = { error: statusOfFailure(error, deps.logger, { rpc: SUBMIT_JOBS_RPC }) };
  };
  const checked: { readonly index: number; readonly item: SubmitJobRequest }[] = [];
  request.items.forEach((item, index) => {
    try {
      assertRequestWithinBounds(SubmitJobRequestSchema, item);
      assertItemParents(item, index);
      checked.push({ index, item });
    } catch (error) {
      refused(index, error);
    }
  });
  // Every item waiting for the state service listens to the call's signal (and stops listening when answered).
  setMaxListeners(checked.length + MAX_LISTENERS_DEFAULT, call.signal);
  for (const level of levelsOfParents(checked)) {
    const admissions: { readonly index: number; readonly admission: AdmitJobRequest }[] = [];
    for (const { index, item } of level) {
      try {
        admissions.push({ index, admission: admissionOf(deps, principal, withResolvedParents(item, results)) });
      } catch (error) {
        refused(index, error);
      }
    }
    for (const wave of wavesByKey(admissions)) {
      await Promise.all(
        wave.map(async ({ index, admission }) => {
          try {
            results[index] = { submitted: await deps.state.admitJobAnswer(admission, call) };
          } catch (error) {
            refused(index, error);
          }
        }),
      );
    }
  }
  return results;
}

/**
 * INVALID_ARGUMENT unless every `depends_on_items` index names an earlier
 * item of the call, once (field paths relative to the item).
 */
function assertItemParents(item: SubmitJobRequest, index: number): void {
  const violations = item.dependsOnItems.flatMap((parent, position) => {
    const field = `depends_on_items[${position}]`;
    if (parent === index) return [{ field, description: 'must not name the item itself' }];
    if (parent < 0 || parent > index) return [{ field, description: 'must name an earlier item of the call' }];
    if (item.dependsOnItems.indexOf(parent) !== position) return [{ field, description: 'must not repeat an item' }];
    return [];
  });
  if (violations.length > 0) throw new DocketError('INVALID_FIELD', 'the item names parents it cannot have', { fieldViolations: violations });
}

/**
 * `item` as admitted: its `depends_on_items` become the job ids those items
 * resolved to, after `depends_on` (which is what its digest covers).
 * FAILED_PRECONDITION, reason PARENT_ITEM_FAILED, when one of them failed.
 */
function withResolvedParents(item: SubmitJobRequest, results: readonly SubmittedItem[]): SubmitJobRequest {
  if (item.dependsOnItems.length === 0) return item;
  const resolved = item.dependsOnItems.map((parent) => {
    const result = results[parent];
    const jobId = result && 'submitted' in result ? submittedJobId(result.submitted) : undefined;
    if (jobId === undefined) throw new DocketError('PARENT_ITEM_FAILED', 'a parent item of this item failed', { metadata: { item: String(parent) } });
    return jobId;
  });
  return create(SubmitJobRequestSchema, { ...item, dependsOn: [...item.dependsOn, ...resolved], dependsOnItems: [] });
}

/**
 * Orders items so that each is admitted after the items it names (pure):
 * level 0 names none, level n names an item of level n - 1 at most. An
 * item also never goes before an earlier item with its key, so the later
 * of two items with one key is still the one that replays or conflicts.
 */
export function levelsOfParents<Item extends { readonly index: number; readonly item: { readonly idempotencyKey: string; readonly dependsOnItems: readonly number[] } }>(
  items: readonly Item[],
): Item[][] {
  const levelOf = new Map<number, number>();
  const keyLevel = new Map<string, number>();
  const levels: Item[][] = [];
  for (const entry of items) {
    const parents = entry.item.dependsOnItems.map((parent) => (levelOf.get(parent) ?? -1) + 1);
    const level = Math.max(0, keyLevel.get(entry.item.idempotencyKey) ?? 0, ...parents);
    levelOf.set(entry.index, level);
    keyLevel.set(entry.item.idempotencyKey, level);
    (levels[level] ??= []).push(entry);
  }
  return levels.filter((level) => level !== undefined);
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

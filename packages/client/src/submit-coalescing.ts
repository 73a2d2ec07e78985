import { toBinary } from '@bufbuild/protobuf';
import { Code, ConnectError, type Client } from '@connectrpc/connect';
import {
  SubmitJobRequestSchema,
  type AdmissionService,
  type SubmitJobRequest,
  type SubmitJobResponse,
} from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import type { Status } from '@docket/proto/google/rpc/status_pb.js';
import { RequestBatcher, abortListenerOfSignal, answeredWithin, failureOfStatus, type ItemOutcome, type TryOptions } from '@docket/client-kit';

/**
 * The most submissions one coalesced SubmitJobs call carries. With each at
 * most {@link COALESCED_ITEM_BYTES}, a call stays under the admission
 * service's 2 MiB request limit with room to spare.
 */
const COALESCED_ITEMS = 100;

/** A submission larger than this, encoded, goes alone as a SubmitJob. */
const COALESCED_ITEM_BYTES = 16 * 1024;

/** Coalesced SubmitJobs calls in flight at once: the second only when full (see `RequestBatcher`). */
const CALLS_IN_FLIGHT = 2;

/**
 * The client's `submit` with `coalesceSubmissions` on: submissions made
 * while a SubmitJobs call is in flight wait for it and go together in the
 * next one (at most {@link COALESCED_ITEMS}); with none in flight, those of
 * one event-loop turn go at its end. Each submission keeps SubmitJob's
 * contract on its own, which SubmitJobs gives its items (SPEC section 14):
 * its own key and digest, the response or the error SubmitJob would have
 * given it. A call refused as a whole fails every submission it carried
 * with that error, and each is retried on its own (same key) as SubmitJob
 * would be. A submission larger than {@link COALESCED_ITEM_BYTES}, or one
 * naming earlier items of a batch (`dependsOnItems`, which only SubmitJobs
 * has), goes alone as the SubmitJob it is.
 *
 * What it saves is a call per job on both sides of the connection: the
 * caller's and the admission service's call machinery, paid once per call
 * instead of once per job (docs/client.md#coalesced-submissions).
 */
export class SubmitCoalescer {
  readonly #admission: Client<typeof AdmissionService>;
  readonly #batcher: RequestBatcher<SubmitJobRequest, SubmitJobResponse>;

  constructor(admission: Client<typeof AdmissionService>) {
    this.#admission = admission;
    this.#batcher = new RequestBatcher((items, budget) => this.#submitJobs(items, budget.timeoutMs), {
      maxBatch: COALESCED_ITEMS,
      maxInFlight: CALLS_IN_FLIGHT,
    });
  }

  /** SubmitJob's answer to `request`, or its error, through a coalesced SubmitJobs call when it can share one. */
  submit(request: SubmitJobRequest, options: TryOptions): Promise<SubmitJobResponse> {
    if (request.dependsOnItems.length > 0 || toBinary(SubmitJobRequestSchema, request).byteLength > COALESCED_ITEM_BYTES) {
      return this.#admission.submitJob(request, options);
    }
    const { timeoutMs, signal } = options;
    return answeredWithin(this.#batcher.submit(request, timeoutMs === undefined ? {} : { timeoutMs }), { timeoutMs, listenForAbort: abortListenerOfSignal(signal) });
  }

  async #submitJobs(items: readonly SubmitJobRequest[], timeoutMs: number | undefined): Promise<ItemOutcome<SubmitJobResponse>[]> {
    const { results } = await this.#admission.submitJobs({ items: [...items] }, timeoutMs === undefined ? {} : { timeoutMs });
    if (results.length !== items.length) throw new ConnectError('SubmitJobs answered a different number of results', Code.Internal);
    return results.map(({ result }): ItemOutcome<SubmitJobResponse> => {
      if (result.case === 'submitted') return { ok: true, value: result.value };
      return { ok: false, error: itemFailure(result.value) };
    });
  }
}

/** The item's error as SubmitJob would have thrown it. */
function itemFailure(status: Status | undefined): ConnectError {
  return status ? failureOfStatus(status) : new ConnectError('SubmitJobs answered an item without a result', Code.Internal);
}

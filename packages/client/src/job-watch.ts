import { Code, type Client } from '@connectrpc/connect';
import { callWithRetry } from '@docket/client-kit';
import type { Event } from '@docket/proto/docket/common/v1/event_pb.js';
import type { Progress } from '@docket/proto/docket/common/v1/progress_pb.js';
import type { EventService, StreamJobEventsResponse } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { DocketClientError } from './docket-client-error.js';
import { JournalChain, genesisAnchor, type JournalAnchor } from './journal-chain.js';
import { resumableStream } from './resumable-stream.js';
import { clientRetry, type RetryPolicy } from './retry-policy.js';

/** One frame of {@link DocketClient.watch}: a verified journal event, or live progress. */
export type JobWatchFrame =
  | {
      readonly kind: 'event';
      /** A journal event, verified against the chain before it was yielded. */
      readonly event: Event;
    }
  | {
      readonly kind: 'progress';
      /** The current attempt's latest progress: not journaled, not replayed after a reconnect. */
      readonly progress: Progress;
    };

/** Options of {@link DocketClient.watch}. */
export interface WatchOptions {
  /** Start after this sequence (default 0: the whole journal). Events arrive from `afterSequence + 1`. */
  readonly afterSequence?: bigint | number;
  /** Aborting ends the watch with CANCELLED. */
  readonly signal?: AbortSignal;
  /** Drop and reopen a connection silent this long (default 45 000 ms: three missed heartbeats). */
  readonly idleTimeoutMs?: number;
}

/** What {@link watchJob} needs from its client. */
export interface JobWatchContext {
  readonly events: Client<typeof EventService>;
  readonly retry: RetryPolicy;
  readonly reconnect: RetryPolicy;
  readonly secrets: readonly string[];
}

/** Default idle timeout of a watch: three heartbeat periods (the server sends one every 15 s). */
export const DEFAULT_IDLE_TIMEOUT_MS = 45_000;

/**
 * A job's journal and live progress, verified and resumed (see
 * {@link DocketClient.watch}). First reads the submission's request digest
 * and the anchor event (`ReadJobEvents`), then tails `StreamJobEvents`
 * from the last sequence accepted, across any number of reconnections.
 */
export async function* watchJob(context: JobWatchContext, jobId: string, options: WatchOptions = {}): AsyncGenerator<JobWatchFrame, void, undefined> {
  const afterSequence = BigInt(options.afterSequence ?? 0);
  if (afterSequence < 0n) throw DocketClientError.local('INVALID_FIELD', 'invalid after_sequence: must be at least 0', { fieldViolations: [{ field: 'after_sequence', description: 'must be at least 0' }] });
  const chain = new JournalChain(await anchorOf(context, jobId, afterSequence, options.signal));
  const frames = resumableStream<StreamJobEventsResponse>(
    (signal) => context.events.streamJobEvents({ jobId, afterSequence: chain.lastSequence }, { signal }),
    {
      rpc: 'StreamJobEvents',
      reconnect: context.reconnect,
      signal: options.signal,
      idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
      isEnd: (response) => response.frame.case === 'end',
      secrets: context.secrets,
    },
  );
  for await (const response of frames) {
    const { frame } = response;
    if (frame.case === 'page') {
      chain.accept(frame.value.events);
      for (const event of frame.value.events) yield { kind: 'event', event };
    } else if (frame.case === 'progress') {
      yield { kind: 'progress', progress: frame.value };
    }
  }
}

/**
 * Where verification starts. From 0: the genesis, plus the request digest.
 * From N > 0: event N as the server returns it (which the server verified
 * on read), checked for self-consistency with the digest; the client takes
 * it on trust as the link to what follows.
 */
async function anchorOf(context: JobWatchContext, jobId: string, afterSequence: bigint, signal: AbortSignal | undefined): Promise<JournalAnchor> {
  const page = await callWithRetry(
    (callOptions) => context.events.readJobEvents({ jobId, afterSequence: afterSequence > 0n ? afterSequence - 1n : 0n, pageSize: 1 }, callOptions),
    clientRetry({ policy: context.retry, rpc: 'ReadJobEvents', signal, secrets: context.secrets }),
  );
  const requestDigest = page.requestDigest === '' ? undefined : page.requestDigest;
  if (afterSequence === 0n) return genesisAnchor(jobId, requestDigest);
  const anchor = page.events[0];
  if (anchor === undefined || anchor.sequence !== afterSequence) {
    throw new DocketClientError(Code.OutOfRange, 'CURSOR_BEYOND_LATEST', `StreamJobEvents failed: CURSOR_BEYOND_LATEST: after_sequence ${afterSequence} is above the latest sequence ${page.latestSequence}`, {
      metadata: { latest_sequence: String(page.latestSequence) },
    });
  }
  new JournalChain({ jobId, requestDigest, previousHash: anchor.previousHash, previousSequence: afterSequence - 1n }).accept([anchor]);
  return { jobId, requestDigest, previousHash: anchor.hash, previousSequence: afterSequence };
}

import { create } from '@bufbuild/protobuf';
import type { Client } from '@connectrpc/connect';
import {
  ReadJobChangesResponseSchema,
  WatchChangesResponseSchema,
  type ReadJobChangesRequest,
  type StateService,
  type WatchChangesResponse,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import { createLogger } from '@docket/service-kit';
import { describe, expect, it } from 'vitest';
import { JobSignalHub } from './job-signal-hub.js';
import { SharedChangeFeed } from './shared-change-feed.js';
import { SubscriberGauge } from './subscriber-gauge.js';

/** A feed of `entries` changes (released at once) behind the two state RPCs the shared walk uses. */
function feedState(entries: number) {
  const changes = Array.from({ length: entries }, (_, index) => ({
    jobId: `job_${index}`,
    revision: 1n,
    position: { transactionId: 10n, entryId: BigInt(index + 1) },
  }));
  return {
    readJobChanges: async (request: ReadJobChangesRequest) => {
      // Without a position this is the head read: the head is before the first entry.
      if (!request.after) return create(ReadJobChangesResponseSchema, { position: { transactionId: 10n, entryId: 0n } });
      const after = request.after.entryId;
      const page = changes.filter((change) => change.position.entryId > after).slice(0, request.limit);
      const last = page.at(-1)?.position ?? request.after;
      return create(ReadJobChangesResponseSchema, { changes: page, position: last, heldBack: false });
    },
    watchChanges: (_request: unknown, options: { signal: AbortSignal }): AsyncIterable<WatchChangesResponse> =>
      (async function* () {
        yield create(WatchChangesResponseSchema, { anyQueue: true });
        await new Promise((resolve) => options.signal.addEventListener('abort', resolve, { once: true }));
      })(),
  };
}

describe('SharedChangeFeed', () => {
  it('wakes a thousand subscribers sixteen per turn of the event loop, so I/O is served between slices', async () => {
    const state = feedState(1) as unknown as Client<typeof StateService>;
    const logger = createLogger('events', () => {});
    const hub = new JobSignalHub(state, logger, new SubscriberGauge(logger));
    hub.start();
    const feed = new SharedChangeFeed(state, hub, logger);
    const wakes = new Array<number>(1000).fill(0);
    let woken = 0;
    const unsubscribe = wakes.map((_, index) =>
      feed.subscribe(() => {
        wakes[index] = (wakes[index] ?? 0) + 1;
        woken += 1;
      }),
    );
    try {
      // Each turn of the loop (a setImmediate, which runs after that turn's I/O) records how many were woken since the last.
      const perTurn: number[] = [];
      let before = 0;
      // Until nothing more is woken for 50 turns in a row (two passes of 1,000 take 126 turns).
      let quietTurns = 0;
      while (quietTurns < 50 && perTurn.length < 10_000) {
        await new Promise((resolve) => setImmediate(resolve));
        perTurn.push(woken - before);
        quietTurns = woken === before && feed.windowSize > 0 ? quietTurns + 1 : 0;
        before = woken;
      }
      // Every subscriber was woken for the new window and its entry (one pass or two), and not again for the empty reads after it.
      expect(feed.windowSize).toBe(1);
      expect(wakes.every((count) => count === wakes[0])).toBe(true);
      expect([1, 2]).toContain(wakes[0]);
      // Never more than 16 in one turn.
      expect(Math.max(...perTurn)).toBeLessThanOrEqual(16);
    } finally {
      for (const leave of unsubscribe) leave();
      await hub.close();
    }
  });
});

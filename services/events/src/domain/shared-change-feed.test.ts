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

type Position = { readonly transactionId: bigint; readonly entryId: bigint };

/** Feed order: (transaction id, entry id). */
const before = (a: Position, b: Position): boolean => a.transactionId < b.transactionId || (a.transactionId === b.transactionId && a.entryId < b.entryId);

/**
 * A feed of `entries` changes (released at once) behind the two state RPCs
 * the shared walk uses; `positionOf(index)` places each (in feed order), by
 * default entry `index + 1` of transaction 10.
 */
function feedState(entries: number, positionOf = (index: number): Position => ({ transactionId: 10n, entryId: BigInt(index + 1) })) {
  const changes = Array.from({ length: entries }, (_, index) => ({ jobId: `job_${index}`, revision: 1n, position: positionOf(index) }));
  return {
    readJobChanges: async (request: ReadJobChangesRequest) => {
      // Without a position this is the head read: the head is before the first entry.
      if (!request.after) return create(ReadJobChangesResponseSchema, { position: { transactionId: 0n, entryId: 0n } });
      const after = request.after;
      const page = changes.filter((change) => before(after, change.position)).slice(0, request.limit);
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
  it('gives, after any position in the window, the feed\'s next entry, whatever the hint', async () => {
    // 600 entries, several to a transaction, with room between entry ids for positions no entry has.
    const positionOf = (index: number): Position => ({ transactionId: BigInt(100 + Math.floor(index / 7)), entryId: BigInt(2 * (index % 7) + 2) });
    const entries = Array.from({ length: 600 }, (_, index) => positionOf(index));
    const state = feedState(entries.length, positionOf) as unknown as Client<typeof StateService>;
    const logger = createLogger('events', () => {});
    const hub = new JobSignalHub(state, logger, new SubscriberGauge(logger));
    hub.start();
    const feed = new SharedChangeFeed(state, hub, logger);
    const unsubscribe = feed.subscribe(() => {});
    try {
      for (let turns = 0; feed.windowSize < entries.length && turns < 10_000; turns += 1) await new Promise((resolve) => setImmediate(resolve));
      expect(feed.windowSize).toBe(entries.length);
      // Every entry's own position, the positions just before and after it in its transaction, and the window's base.
      const asked: Position[] = [{ transactionId: 0n, entryId: 0n }];
      for (const { transactionId, entryId } of entries) asked.push({ transactionId, entryId: entryId - 1n }, { transactionId, entryId }, { transactionId, entryId: entryId + 1n });
      for (const position of asked) {
        const expected = entries.find((entry) => before(position, entry));
        const index = expected === undefined ? entries.length : entries.indexOf(expected);
        // Whatever the hint says, right, stale or absurd, the answer is the same entry.
        for (const hint of [undefined, -1, 0, index - 1, index, index + 1, entries.length, 10_000]) {
          const step = feed.next(position, hint);
          if (expected === undefined) expect(step.kind).toBe('caught-up');
          else expect(step.kind === 'entry' && [step.position, step.index]).toEqual([expected, index]);
        }
      }
      // Walking with each step's hint takes every entry once, in order.
      const walked: Position[] = [];
      let position: Position = { transactionId: 0n, entryId: 0n };
      for (let step = feed.next(position); step.kind === 'entry'; step = feed.next(position, step.index + 1)) walked.push((position = step.position));
      expect(walked).toEqual(entries);
    } finally {
      unsubscribe();
      await hub.close();
    }
  });

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

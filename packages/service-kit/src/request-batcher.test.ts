import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it, vi } from 'vitest';
import { Code } from '@connectrpc/connect';
import { RequestBatcher, type BatchBudget, type ItemOutcome } from './request-batcher.js';

/** The end of this event-loop turn, when the batcher sends what arrived in it. */
const turnEnds = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A decide function whose batches the test releases by hand. */
function heldBatches() {
  const batches: { items: readonly number[]; release: (outcomes?: ItemOutcome<string>[]) => void; fail: (error: Error) => void }[] = [];
  const decide = (items: readonly number[]) =>
    new Promise<ItemOutcome<string>[]>((resolve, reject) => {
      batches.push({
        items,
        release: (outcomes) => resolve(outcomes ?? items.map((item) => ({ ok: true, value: `decided ${item}` }))),
        fail: reject,
      });
    });
  return { batches, decide };
}

describe('RequestBatcher', () => {
  it("decides a batch in its first item's async context, not in the context of the batch that finished before it", async () => {
    const caller = new AsyncLocalStorage<string>();
    const seen: (string | undefined)[] = [];
    const { batches, decide } = heldBatches();
    const commit = new RequestBatcher((items: readonly number[]) => {
      seen.push(caller.getStore());
      return decide(items);
    }, { maxBatch: 10, maxInFlight: 1 });
    const first = caller.run('call 1', () => commit.submit(1));
    await turnEnds();
    const later = ['call 2', 'call 3'].map((name, index) => caller.run(name, () => commit.submit(index + 2)));
    caller.run('the releaser', () => batches[0]?.release());
    await first;
    await Promise.resolve();
    expect(batches.map((batch) => batch.items)).toEqual([[1], [2, 3]]);
    batches[1]?.release();
    await Promise.all(later);
    expect(seen).toEqual(['call 1', 'call 2']);
  });

  it('sends an item at the end of its turn when nothing is in flight, and groups what arrives meanwhile into the next batch', async () => {
    const { batches, decide } = heldBatches();
    const commit = new RequestBatcher(decide, { maxBatch: 10, maxInFlight: 1 });
    const first = commit.submit(1);
    expect(batches).toEqual([]);
    await turnEnds();
    expect(batches.map((batch) => batch.items)).toEqual([[1]]);
    const later = [2, 3, 4].map((item) => commit.submit(item));
    expect(commit.load).toEqual({ waiting: 3, inFlight: 1 });
    batches[0]?.release();
    expect(await first).toBe('decided 1');
    await Promise.resolve();
    expect(batches.map((batch) => batch.items)).toEqual([[1], [2, 3, 4]]);
    batches[1]?.release();
    expect(await Promise.all(later)).toEqual(['decided 2', 'decided 3', 'decided 4']);
    expect(commit.load).toEqual({ waiting: 0, inFlight: 0 });
  });

  it('sends the items submitted in one turn as one batch', async () => {
    const { batches, decide } = heldBatches();
    const commit = new RequestBatcher(decide, { maxBatch: 10, maxInFlight: 1 });
    const answers = [1, 2, 3].map((item) => commit.submit(item));
    await turnEnds();
    expect(batches.map((batch) => batch.items)).toEqual([[1, 2, 3]]);
    batches[0]?.release();
    expect(await Promise.all(answers)).toEqual(['decided 1', 'decided 2', 'decided 3']);
  });

  it.each([
    { maxBatch: 2, maxInFlight: 1, items: 5, firstBatches: [[0, 1]], secondBatches: [[0, 1], [2, 3]] },
    { maxBatch: 3, maxInFlight: 2, items: 9, firstBatches: [[0, 1, 2], [3, 4, 5]], secondBatches: [[0, 1, 2], [3, 4, 5], [6, 7, 8]] },
  ])('never exceeds maxBatch $maxBatch items or maxInFlight $maxInFlight batches', async ({ maxBatch, maxInFlight, items, firstBatches, secondBatches }) => {
    const { batches, decide } = heldBatches();
    const commit = new RequestBatcher(decide, { maxBatch, maxInFlight });
    const answers = Array.from({ length: items }, (_, item) => commit.submit(item));
    await turnEnds();
    expect(batches.map((batch) => batch.items)).toEqual(firstBatches);
    batches[0]?.release();
    await answers[0];
    await Promise.resolve();
    expect(batches.map((batch) => batch.items)).toEqual(secondBatches);
    while (batches.some((batch) => batch.items.length > 0)) {
      const open = batches.splice(0);
      open.forEach((batch) => batch.release());
      await Promise.resolve();
      await Promise.resolve();
    }
    expect(await Promise.all(answers)).toEqual(Array.from({ length: items }, (_, item) => `decided ${item}`));
  });

  it('starts a batch beside a running one only when it is full, and sends a partial one when nothing runs', async () => {
    const { batches, decide } = heldBatches();
    const commit = new RequestBatcher(decide, { maxBatch: 3, maxInFlight: 2 });
    const first = commit.submit(0);
    await turnEnds();
    const partial = [1, 2].map((item) => commit.submit(item));
    await turnEnds();
    expect(batches.map((batch) => batch.items), 'two waiting items could still grow into a whole batch').toEqual([[0]]);
    const whole = [3, 4].map((item) => commit.submit(item));
    await turnEnds();
    expect(batches.map((batch) => batch.items), 'three waiting: a whole batch goes beside the running one').toEqual([[0], [1, 2, 3]]);
    batches[0]?.release();
    await first;
    await Promise.resolve();
    expect(batches.map((batch) => batch.items), 'one partial item waits beside the running batch').toEqual([[0], [1, 2, 3]]);
    batches[1]?.release();
    await Promise.all(partial);
    await Promise.resolve();
    expect(batches.map((batch) => batch.items), 'it goes once nothing runs').toEqual([[0], [1, 2, 3], [4]]);
    batches[2]?.release();
    expect(await Promise.all([...partial, ...whole])).toEqual(['decided 1', 'decided 2', 'decided 3', 'decided 4']);
  });

  it('starts the items startsBeside picks beside the running batches, the others waiting in order: odd beside even and even beside odd', async () => {
    const { batches, decide } = heldBatches();
    const odd = (item: number) => item % 2 === 1;
    const even = (item: number) => !odd(item);
    const commit = new RequestBatcher(decide, {
      maxBatch: 10,
      maxInFlight: 2,
      startsBeside: (running) => (!running.some((batch) => batch.some(odd)) ? odd : !running.some((batch) => batch.some(even)) ? even : undefined),
    });
    const first = commit.submit(2);
    await turnEnds();
    const waiting = [4, 5, 6, 7].map((item) => commit.submit(item));
    await turnEnds();
    expect(batches.map((batch) => batch.items), 'the odd ones go beside the batch of evens; the even ones wait').toEqual([[2], [5, 7]]);
    const later = [9, 8].map((item) => commit.submit(item));
    await turnEnds();
    expect(batches.map((batch) => batch.items), 'never beyond maxInFlight').toEqual([[2], [5, 7]]);
    batches[0]?.release();
    await first;
    await Promise.resolve();
    expect(batches.map((batch) => batch.items), 'beside the odd batch, the even ones, in order').toEqual([[2], [5, 7], [4, 6, 8]]);
    batches[1]?.release();
    await Promise.all([waiting[1], waiting[3]]);
    await Promise.resolve();
    expect(batches.map((batch) => batch.items)).toEqual([[2], [5, 7], [4, 6, 8], [9]]);
    batches[2]?.release();
    batches[3]?.release();
    expect(await Promise.all([...waiting, ...later])).toEqual(['decided 4', 'decided 5', 'decided 6', 'decided 7', 'decided 9', 'decided 8']);
  });

  it('gives each item its own answer, and a failed batch fails only its own items', async () => {
    const { batches, decide } = heldBatches();
    const commit = new RequestBatcher(decide, { maxBatch: 10, maxInFlight: 1 });
    const lone = commit.submit(0);
    await turnEnds();
    const [good, bad] = [commit.submit(1), commit.submit(2)];
    batches[0]?.fail(new Error('commit failed'));
    await expect(lone).rejects.toThrow('commit failed');
    await Promise.resolve();
    batches[1]?.release([{ ok: true, value: 'one' }, { ok: false, error: new Error('two refused') }]);
    expect(await good).toBe('one');
    await expect(bad).rejects.toThrow('two refused');
  });

  it('never decides an item whose caller stopped waiting before its batch formed, and tells decide how long the latest caller waits', async () => {
    const budgets: (number | undefined)[] = [];
    const decided: number[][] = [];
    let release: () => void = () => {};
    const commit = new RequestBatcher(
      async (items: readonly number[], budget: BatchBudget) => {
        decided.push([...items]);
        budgets.push(budget.timeoutMs);
        await new Promise<void>((resolve) => (release = resolve));
        return items.map((item) => ({ ok: true as const, value: item }));
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    const first = commit.submit(1, { timeoutMs: 60_000 });
    await turnEnds();
    const impatient = commit.submit(2, { timeoutMs: 1 });
    const patient = commit.submit(3, { timeoutMs: 5_000 });
    const later = commit.submit(4, { timeoutMs: 20_000 });
    // Real time: item 2's deadline (performance.now(), no clock to substitute) passes while batch 1 runs.
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    expect(await first).toBe(1);
    await expect(impatient).rejects.toMatchObject({ code: Code.DeadlineExceeded });
    await vi.waitUntil(() => decided.length === 2, { timeout: 5_000, interval: 1 }); // the second batch has formed
    release();
    expect(await Promise.all([patient, later])).toEqual([3, 4]);
    expect(decided).toEqual([[1], [3, 4]]);
    expect(budgets[0]).toBeGreaterThan(59_000);
    // The second batch runs as long as its latest caller, item 4, still waits.
    expect(budgets[1]).toBeGreaterThan(19_000);
    expect(budgets[1]).toBeLessThanOrEqual(20_000);
  });

  it('gives a batch no budget when one of its callers set no deadline', async () => {
    const budgets: (number | undefined)[] = [];
    const commit = new RequestBatcher(
      async (items: readonly number[], budget: BatchBudget) => {
        budgets.push(budget.timeoutMs);
        return items.map((item) => ({ ok: true as const, value: item }));
      },
      { maxBatch: 10, maxInFlight: 1 },
    );
    await commit.submit(1);
    expect(budgets).toEqual([undefined]);
  });
});

// The closed-loop caller: `concurrency` callers, each issuing its next call
// as soon as the previous one returns, until `total` calls have been made.
// Used for submissions in the generators and by the older journal and
// streams benchmarks.

/** Runs `task(index)` `total` times with `concurrency` in flight; returns per-call latencies (ms) and elapsed ms. */
export async function runConcurrently(total, concurrency, task) {
  const latencies = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, total) }, async () => {
      while (next < total) {
        const index = next++;
        const t0 = performance.now();
        await task(index);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { latencies, elapsedMs: performance.now() - started };
}

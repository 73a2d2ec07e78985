import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `probe` every `intervalMs` until it holds; fails after `timeoutMs`
 * naming `what`. The timeout is a generous bound on something that must
 * happen (a recovery, a wake-up), never a speed goal.
 */
export async function until(probe: () => Promise<boolean>, what: string, timeoutMs = 20_000, intervalMs = 200): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await probe())) {
    if (performance.now() > deadline) throw new Error(`not after ${timeoutMs} ms: ${what}`);
    // Real time: the poll interval of this wait.
    await sleep(intervalMs);
  }
}

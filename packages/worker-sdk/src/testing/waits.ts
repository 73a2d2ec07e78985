import { delay } from '@docket/contracts';

/** Polls `condition` every 10 ms until it holds; fails after `ms`. */
export async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    // Real time: the poll interval of this wait.
    await delay(10);
  }
}

/** Resolves when `signal` aborts (a handler waiting for its cancel, pause, loss or shutdown). */
export function aborted(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
}

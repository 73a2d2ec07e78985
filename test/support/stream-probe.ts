import { setTimeout as sleep } from 'node:timers/promises';
import type { ServiceProcess } from './service-process.js';

/**
 * Reads a server stream frame by frame with a time limit per wait, so a
 * test that waits for a frame that never comes fails instead of hanging.
 * A wait that timed out keeps its pending read for the next call, so no
 * frame is ever lost between calls.
 */
export class StreamReader<T> {
  #pending: Promise<IteratorResult<T>> | undefined;

  constructor(private readonly frames: AsyncIterator<T>) {}

  /**
   * The next frame that `wanted` accepts (skipping, say, heartbeats), or
   * undefined when the stream ends first; fails after `timeoutMs`.
   */
  async next(wanted: (frame: T) => boolean = () => true, timeoutMs = 5_000): Promise<T | undefined> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      this.#pending ??= this.frames.next();
      const timer = new AbortController();
      const next = await Promise.race([
        this.#pending,
        // Real time: a timeout race, the bound on this wait for a frame.
        sleep(deadline - performance.now(), 'timeout' as const, { signal: timer.signal }).catch(() => 'timeout' as const),
      ]);
      timer.abort();
      if (next === 'timeout') throw new Error(`no wanted frame within ${timeoutMs} ms`);
      this.#pending = undefined;
      if (next.done === true) return undefined;
      if (wanted(next.value)) return next.value;
    }
  }

  /** Stops reading: ends the call. */
  async cancel(): Promise<void> {
    await this.frames.return?.();
  }
}

/** Polls `probe` every 25 ms until it returns a value; fails after `timeoutMs` naming `what`. */
export async function eventually<T>(probe: () => T | undefined, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    // Real time: the poll interval of this wait.
    await sleep(25);
  }
}

/** The JSON log lines of a service process so far, parsed (other output skipped). */
export function logLines(service: ServiceProcess): Record<string, unknown>[] {
  return service.logs.flatMap((line) => {
    try {
      const parsed: unknown = JSON.parse(line);
      return parsed !== null && typeof parsed === 'object' ? [parsed as Record<string, unknown>] : [];
    } catch {
      return [];
    }
  });
}

import { setTimeout as sleep } from 'node:timers/promises';
import { Backoff } from './backoff.js';
import type { Logger } from './logger.js';

/** What a {@link SharedUpstream} opens, whom it tells, and how it paces itself. */
export interface SharedUpstreamOptions<F> {
  /** Names the stream in log lines ("change stream"). */
  readonly name: string;
  /** Opens the stream; it must end or throw once `signal` aborts. */
  readonly open: (signal: AbortSignal) => AsyncIterable<F>;
  /** Each frame, as it arrives; must not block. */
  readonly onFrame: (frame: F) => void;
  /**
   * The stream broke, or a new one delivered its first frame: whatever
   * changed in between was not announced, so every reader should look again.
   */
  readonly onGap: () => void;
  readonly logger: Logger;
  /**
   * A stream silent this long is taken for dead (a stopped or half-open
   * peer) and reopened; the peer must send frames more often than this
   * (a heartbeat). Default: no limit.
   */
  readonly silenceLimitMs?: number;
  /**
   * Called when the stream went silent past its limit: the connection
   * under it is most likely dead too (a stopped peer, a half-open socket),
   * so the caller can drop it rather than reopen the stream on it.
   */
  readonly onSilent?: () => void;
  /** The first pause after the stream breaks; doubled per failed reopen. Default 100 ms. */
  readonly minBackoffMs?: number;
  /** The longest pause between reopens. Default 5 s. */
  readonly maxBackoffMs?: number;
}

/**
 * One long-lived server stream a process holds for all of its readers (the
 * state service's WatchChanges): opened once, reopened with exponential
 * backoff whenever it breaks or goes silent past its limit, for as long as
 * the process runs. Its frames are handed to `onFrame`; every break and
 * every recovery is reported as a gap (`onGap`), since changes in between
 * were not announced. {@link live} says whether frames are flowing right
 * now, so readers can tell a quiet upstream from a lost one.
 */
export class SharedUpstream<F> {
  readonly #stop = new AbortController();
  readonly #backoff: Backoff;
  #running: Promise<void> | undefined;
  #live = false;
  #opened = 0;
  #liveWaiters = new Set<() => void>();

  constructor(private readonly options: SharedUpstreamOptions<F>) {
    this.#backoff = new Backoff({ firstMs: options.minBackoffMs ?? 100, maxMs: options.maxBackoffMs ?? 5_000 });
  }

  /** Opens the stream and keeps it open until {@link close}. Idempotent. */
  start(): void {
    this.#running ??= this.#run();
  }

  /** Whether the current stream has delivered its first frame and has neither broken nor gone silent since. */
  get live(): boolean {
    return this.#live;
  }

  /** How many times a stream has been opened, reopens included (for tests and metrics). */
  get streamsOpened(): number {
    return this.#opened;
  }

  /** Resolves once the stream is {@link live} (at once if it is), or when `signal` aborts. */
  whenLive(signal: AbortSignal): Promise<void> {
    if (this.#live || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        this.#liveWaiters.delete(done);
        resolve();
      };
      this.#liveWaiters.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** Closes the stream for good; nothing more is reported. */
  async close(): Promise<void> {
    this.#stop.abort();
    await this.#running;
    for (const waiter of [...this.#liveWaiters]) waiter();
  }

  async #run(): Promise<void> {
    const { logger, name } = this.options;
    while (!this.#stop.signal.aborted) {
      this.#opened += 1;
      const stream = new AbortController();
      const stopStream = (): void => stream.abort();
      this.#stop.signal.addEventListener('abort', stopStream, { once: true });
      let silence: NodeJS.Timeout | undefined;
      let silent = false;
      let heardAt = performance.now();
      const heard = (): void => {
        heardAt = performance.now();
      };
      // One timer per limit, not one per frame. When it fires, the verdict waits
      // for the I/O phase that follows (setImmediate): on a busy event loop the
      // timer can fire before frames already in the socket have been read, and a
      // live upstream must not be taken for dead because its process was slow.
      const watch = (afterMs: number): void => {
        const limitMs = this.options.silenceLimitMs;
        if (limitMs === undefined) return;
        silence = setTimeout(
          () =>
            setImmediate(() => {
              if (stream.signal.aborted) return;
              const quietMs = performance.now() - heardAt;
              if (quietMs < limitMs) return watch(limitMs - quietMs);
              silent = true;
              stream.abort();
              this.options.onSilent?.();
            }),
          afterMs,
        );
        silence.unref();
      };
      try {
        watch(this.options.silenceLimitMs ?? 0);
        for await (const frame of this.options.open(stream.signal)) {
          heard();
          if (!this.#live) {
            const failures = this.#backoff.failures;
            if (failures > 0) logger.info(`${name} restored`, { failures });
            this.#backoff.reset();
            this.#becomeLive();
          }
          this.options.onFrame(frame);
        }
      } catch {
        // A broken stream is expected while the peer restarts; handled below.
      } finally {
        clearTimeout(silence);
        stream.abort(); // also ends a verdict already waiting for its setImmediate
        this.#stop.signal.removeEventListener('abort', stopStream);
      }
      if (this.#stop.signal.aborted) return;
      this.#live = false;
      this.options.onGap();
      const pauseMs = this.#backoff.next();
      if (this.#backoff.failures === 1) logger.warn(silent ? `${name} went silent, reopening` : `${name} broke, reopening`);
      await sleep(pauseMs, undefined, { signal: this.#stop.signal }).catch(() => {});
    }
  }

  #becomeLive(): void {
    this.#live = true;
    this.options.onGap();
    for (const waiter of [...this.#liveWaiters]) waiter();
  }
}

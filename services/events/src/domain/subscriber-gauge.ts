import type { Logger } from '@docket/service-kit';

/** What the events process holds open on behalf of subscribers. */
export type SubscriberResource = 'job_event_streams' | 'change_feeds' | 'upstream_streams';

/** How often, at most, a changed gauge is logged. */
const LOG_INTERVAL_MS = 500;

/**
 * Counts the streams a process serves and the state-service streams it
 * holds for them, and logs `{msg: "subscribers", job_event_streams,
 * change_feeds, upstream_streams, upstream_reopened_total, active_timers}`
 * at most every 500 ms after a change. `upstream_reopened_total` counts
 * state streams that broke (a state restart) and were reopened without
 * the subscriber noticing. `active_timers` is the process' own count of armed
 * timers (`process.getActiveResourcesInfo()`), not a figure this class
 * keeps, so a stream that leaked a heartbeat timer would show up there.
 * Operators read it as the live subscriber count; tests read it to prove
 * that cancelled subscribers leave nothing behind.
 */
export class SubscriberGauge {
  readonly #counts: Record<SubscriberResource, number> = { job_event_streams: 0, change_feeds: 0, upstream_streams: 0 };
  #reopened = 0;
  #scheduled: NodeJS.Timeout | undefined;

  constructor(private readonly logger: Logger) {}

  /** What the process holds open now, per resource. */
  get counts(): Readonly<Record<SubscriberResource, number>> {
    return { ...this.#counts };
  }

  /** Records that a resource was acquired. */
  opened(resource: SubscriberResource): void {
    this.#counts[resource] += 1;
    this.#schedule();
  }

  /** Records that a resource was released. */
  closed(resource: SubscriberResource): void {
    this.#counts[resource] -= 1;
    this.#schedule();
  }

  /** Records that a broken upstream stream was replaced by a new one. */
  reopened(): void {
    this.#reopened += 1;
    this.#schedule();
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = setTimeout(() => {
      this.#scheduled = undefined;
      const activeTimers = process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
      this.logger.info('subscribers', { ...this.#counts, upstream_reopened_total: this.#reopened, active_timers: activeTimers });
    }, LOG_INTERVAL_MS);
    this.#scheduled.unref();
  }
}

import type pg from 'pg';
import { Backoff, FanOut, type Logger } from '@docket/service-kit';
import { JOB_CHANGES_CHANNEL } from './queries/job-changes.js';
import { CONNECTION_LIMITS } from './pool.js';
import { withStatementBudget } from './statement-budget.js';
import { WatchedPgClient } from './watched-pg-client.js';

/**
 * How often the LISTEN connection is asked a `select 1`, and how long the
 * answer may take: a partitioned or half-open connection hears no
 * notifications and reports no error, so it is noticed by a heartbeat
 * that goes unanswered, within about 10 s (interval, budget and the
 * client's grace, `WatchedPgClient`).
 */
export const LISTENER_HEARTBEAT_INTERVAL_MS = 5_000;
const LISTENER_HEARTBEAT_BUDGET_MS = 3_000;

/** What a committed job change announces (see `recordJobChange`). */
export interface JobChangeAnnouncement {
  readonly jobId: string;
  readonly latestSequence: bigint;
  readonly status: string;
  readonly queue: string;
  /** Set when the announcement is a progress report (see `announceProgress`). */
  readonly progress?: StoredProgress;
}

/** Progress as stored on the job row and announced. */
export interface StoredProgress {
  readonly completed_units: string;
  readonly total_units: string;
  readonly message: string;
  readonly updated_at: string;
}

/** Receives announcements; `undefined` means "announcements may have been missed, re-read". */
export type ChangeListener = (announcement: JobChangeAnnouncement | undefined) => void;

/**
 * The state process's one LISTEN connection, fanned out in memory: any
 * number of watchers of one job, and of all jobs, share it, and a watcher
 * that goes away only removes a map entry. Notifications arrive after the
 * announcing transaction commits, through whichever state replica made it.
 * If the connection drops, or stops answering its heartbeat, it
 * reconnects with backoff and tells every listener to re-read, since
 * announcements in between are lost.
 */
export class ChangeListenerHub {
  readonly #watchers = new FanOut<JobChangeAnnouncement | undefined>();
  /** Pauses between reconnection attempts: 200 ms doubling to 5 s, from 200 ms again after each success. */
  readonly #reconnectBackoff = new Backoff({ firstMs: 200, maxMs: 5_000 });
  #client: pg.Client | undefined;
  #stopped = false;
  #retryTimer: NodeJS.Timeout | undefined;
  #heartbeatTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly connectionString: string,
    private readonly logger: Logger,
  ) {}

  /** Connects and starts listening; resolves once LISTEN is in force. */
  async start(): Promise<void> {
    const client = new WatchedPgClient({
      connectionString: this.connectionString,
      application_name: 'docket-state-listener',
      connectionTimeoutMillis: CONNECTION_LIMITS.connectionTimeoutMillis,
      keepAlive: true,
      keepAliveInitialDelayMillis: CONNECTION_LIMITS.keepAliveInitialDelayMillis,
    });
    client.on('notification', (message) => this.#dispatch(message.payload));
    client.on('error', () => this.#reconnectSoon(client));
    client.on('end', () => this.#reconnectSoon(client));
    await client.connect();
    await client.query(`LISTEN ${JOB_CHANGES_CHANNEL}`);
    this.#client = client;
    this.#scheduleHeartbeat(client);
  }

  /** Calls `listener` for every change of `jobId`; returns the unsubscribe function. */
  watchJob(jobId: string, listener: ChangeListener): () => void {
    return this.#watchers.watch(jobId, listener);
  }

  /** Calls `listener` for every change of any job; returns the unsubscribe function. */
  watchAll(listener: ChangeListener): () => void {
    return this.#watchers.watchAll(listener);
  }

  /** How many watchers are registered (for tests and metrics). */
  get watcherCount(): number {
    return this.#watchers.count;
  }

  /** Stops listening; watchers get nothing more. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#heartbeatTimer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  #dispatch(payload: string | undefined): void {
    let announcements: JobChangeAnnouncement[] | undefined;
    try {
      announcements = parseAnnouncement(payload ?? '');
    } catch {
      this.logger.warn('ignored an unreadable change announcement');
      return;
    }
    if (announcements === undefined) return this.#watchers.broadcast(undefined);
    for (const announcement of announcements) this.#watchers.deliver(announcement.jobId, announcement);
  }

  #scheduleHeartbeat(client: pg.Client): void {
    this.#heartbeatTimer = setTimeout(() => {
      withStatementBudget(LISTENER_HEARTBEAT_BUDGET_MS, () => client.query('select 1')).then(
        () => {
          if (this.#client === client && !this.#stopped) this.#scheduleHeartbeat(client);
        },
        () => this.#reconnectSoon(client),
      );
    }, LISTENER_HEARTBEAT_INTERVAL_MS);
    this.#heartbeatTimer.unref();
  }

  #reconnectSoon(failed: pg.Client): void {
    if (this.#stopped || this.#client !== failed) return;
    this.#client = undefined;
    clearTimeout(this.#heartbeatTimer);
    failed.removeAllListeners('notification');
    void failed.end().catch(() => {});
    this.logger.warn('change listener lost its connection, reconnecting');
    this.#retryTimer = setTimeout(() => {
      this.start().then(
        () => {
          this.#reconnectBackoff.reset();
          this.#watchers.broadcast(undefined);
        },
        () => {
          this.#client = failed;
          this.#reconnectSoon(failed);
        },
      );
    }, this.#reconnectBackoff.next());
  }
}

/**
 * The changes a NOTIFY payload announces (see `announcementOf`), or
 * undefined for a resync announcement. Throws on a payload of another shape.
 */
export function parseAnnouncement(payload: string): JobChangeAnnouncement[] | undefined {
  const parsed = JSON.parse(payload) as { resync?: boolean; jobs?: unknown[][] };
  if (parsed.resync === true) return undefined;
  if (!Array.isArray(parsed.jobs)) throw new Error('an announcement lists jobs');
  return parsed.jobs.map(([jobId, latestSequence, status, queue, progress]) => {
    if (typeof jobId !== 'string' || typeof latestSequence !== 'string' || typeof status !== 'string' || typeof queue !== 'string') {
      throw new Error('an announced change is [job_id, latest_sequence, status, queue, progress?]');
    }
    return {
      jobId,
      latestSequence: BigInt(latestSequence),
      status,
      queue,
      ...(progress && typeof progress === 'object' ? { progress: progress as StoredProgress } : {}),
    };
  });
}

/**
 * Running counters of a worker, for dashboards, overhead measurements and
 * tests. Read them with `worker.stats`; the object is live, copy it to keep
 * a snapshot.
 */
export interface WorkerStats {
  /** ClaimJobs calls that returned (a replay counts once). */
  claimCalls: number;
  /** Attempts claimed. */
  claimed: number;
  /** Most handlers running at once (never above `concurrency`). */
  maxRunning: number;
  /** Most ReportOutcome calls in flight at once (never above `concurrency`). */
  maxReportsInFlight: number;
  /** Most claimed jobs waiting in the prefetch buffer at once (never above `prefetch`). */
  maxPrefetched: number;
  /** Successful RenewAttempt calls. */
  renewals: number;
  /** RenewAttempt tries that failed and were retried with the same operation id. */
  renewalRetries: number;
  /** Sum of the wall-clock time of successful renewals, retries included, in milliseconds. */
  renewalLatencyMs: number;
}

/** All counters at zero. */
export function emptyWorkerStats(): WorkerStats {
  return { claimCalls: 0, claimed: 0, maxRunning: 0, maxReportsInFlight: 0, maxPrefetched: 0, renewals: 0, renewalRetries: 0, renewalLatencyMs: 0 };
}

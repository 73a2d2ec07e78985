/** What one maintenance step did: every background step (reaper, retries, retention, deletions, schedules...) answers it. */
export interface MaintenanceStep {
  readonly handled: number;
  /** When the next item falls due, if one is known. */
  readonly nextDueAt: Date | undefined;
}

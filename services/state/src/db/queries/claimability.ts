/**
 * The predicates that decide whether a job may be claimed, as SQL
 * fragments over a `jobs` row (or a `queue_settings` row) named by its
 * alias. The claim statements (`claims.ts`) and ExplainJob's statement
 * (`explain-job.ts`) are both built from these, so an explanation is never
 * a second opinion about what a claim would do.
 */

/** The job is queued and its `run_after`, if any, has come by the database clock. */
export function isQueuedAndDue(job: string): string {
  return `${job}.status = 'QUEUED' and (${job}.run_after is null or ${job}.run_after <= now())`;
}

/** No background task set the job aside (`job_quarantine`). */
export function isNotQuarantined(job: string): string {
  return `not exists (select 1 from job_quarantine x where x.job_id = ${job}.id)`;
}

/** A queued, due, unquarantined job: what a claim may hand out, subject to its queue's policy. */
export function isClaimable(job: string): string {
  return `${isQueuedAndDue(job)} and ${isNotQuarantined(job)}`;
}

/** The job holds one of its queue's (and its key's) concurrency slots: a worker holds it. */
export function holdsASlot(job: string): string {
  return `${job}.status in ('RUNNING', 'CANCELLING')`;
}

/** Claim order within a queue: highest priority, then oldest, then id. */
export function claimOrder(job: string): string {
  return `${job}.priority desc, ${job}.created_at, ${job}.id`;
}

/** `ahead` comes before `job` in {@link claimOrder}. */
export function isAheadInClaimOrder(ahead: string, job: string): string {
  return `(${ahead}.priority > ${job}.priority or (${ahead}.priority = ${job}.priority and (${ahead}.created_at, ${ahead}.id) < (${job}.created_at, ${job}.id)))`;
}

/**
 * The tokens in a queue's rate-limit bucket now (fractional; null when the
 * queue has no rate limit): `rate_tokens` as last spent (null: full),
 * refilled by the database clock since `rate_refilled_at`, never above
 * `rate_jobs`. A claim may spend the whole ones.
 */
export function rateTokensNow(settings: string): string {
  return `case when ${settings}.rate_jobs is null then null else least(${settings}.rate_jobs::float8,
       coalesce(${settings}.rate_tokens, ${settings}.rate_jobs) + extract(epoch from now() - coalesce(${settings}.rate_refilled_at, now())) * 1000 * ${settings}.rate_jobs / ${settings}.rate_per_ms) end`;
}

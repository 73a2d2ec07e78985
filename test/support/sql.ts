import pg from 'pg';
import type { JsonValue } from '@docket/contracts';

/**
 * A direct connection to a test database, for assertions about what is
 * (and is not) stored, and for simulating damage that no API allows.
 */
export async function openSql(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/**
 * Polls every 10 ms, `tries` times at most, until a backend of the
 * observer's database waits for a lock (only a backend whose
 * `application_name` is `applicationName`, when given); throws `failure`
 * when none did. How a test knows a statement it started is now blocked.
 */
export async function untilWaitingForALock(observer: pg.Client, failure: string, options: { readonly applicationName?: string; readonly tries?: number } = {}): Promise<void> {
  const { applicationName, tries = 500 } = options;
  for (let i = 0; i < tries; i++) {
    const { rows } = await observer.query<{ n: number }>(
      "select count(*)::int as n from pg_stat_activity where datname = current_database() and ($1::text is null or application_name = $1) and wait_event_type = 'Lock'",
      [applicationName ?? null],
    );
    if ((rows[0]?.n ?? 0) > 0) return;
    // Real time: the poll interval of this wait.
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(failure);
}

/** One stored journal event, a `job_events` row as node-postgres reads it (bigints as strings). */
export interface StoredEventRow {
  readonly job_id: string;
  readonly sequence: string;
  readonly type: string;
  readonly payload: { [k: string]: JsonValue };
  readonly occurred_at: Date;
  readonly previous_hash: string;
  readonly hash: string;
}

/** The job's stored journal, in order. */
export async function storedEvents(sql: pg.Client, jobId: string): Promise<StoredEventRow[]> {
  return (await sql.query<StoredEventRow>('select * from job_events where job_id = $1 order by sequence', [jobId])).rows;
}

/** Everything stored about one job: its row and its journal, in order. */
export async function storedJob(sql: pg.Client, jobId: string): Promise<{ job: unknown; events: StoredEventRow[] }> {
  const job = await sql.query('select * from jobs where id = $1', [jobId]);
  return { job: job.rows[0], events: await storedEvents(sql, jobId) };
}

/** Row counts of the tables admission writes, to prove that nothing was written. */
export async function admissionFootprint(sql: pg.Client): Promise<Record<string, number>> {
  const result = await sql.query<{ jobs: string; events: string; records: string }>(
    `select (select count(*) from jobs) as jobs,
            (select count(*) from job_events) as events,
            (select count(*) from idempotency_records) as records`,
  );
  const row = result.rows[0]!;
  return { jobs: Number(row.jobs), events: Number(row.events), records: Number(row.records) };
}

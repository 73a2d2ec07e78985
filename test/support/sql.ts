import pg from 'pg';

/**
 * A direct connection to a test database, for assertions about what is
 * (and is not) stored, and for simulating damage that no API allows.
 */
export async function openSql(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return client;
}

/** Everything stored about one job: its row and its journal, in order. */
export async function storedJob(sql: pg.Client, jobId: string): Promise<{ job: unknown; events: unknown[] }> {
  const job = await sql.query('select * from jobs where id = $1', [jobId]);
  const events = await sql.query('select * from job_events where job_id = $1 order by sequence', [jobId]);
  return { job: job.rows[0], events: events.rows };
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

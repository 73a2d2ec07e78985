import { sql } from 'kysely';
import type { Queryable } from '../database.js';
import { jobRowFromJson } from '../json-rows.js';
import type { JobRow, Viewer } from './jobs.js';

/**
 * A job the viewer may see (undefined for a missing or foreign one, alike) and the
 * feed's horizon, in one statement, so one snapshot: the horizon is its
 * xmin, so every transaction below it is in the read and any change the
 * read does not show lies at or after it.
 *
 * ```sql
 * select pg_snapshot_xmin(pg_current_snapshot()), (select to_json(j) from jobs j where id = $1 and (<admin> or owner = $2))
 * ```
 */
export async function findVisibleJobAtHorizon(db: Queryable, viewer: Viewer, jobId: string): Promise<{ readonly row: JobRow | undefined; readonly horizon: bigint }> {
  const result = await sql<{ horizon: string; job: Record<string, unknown> | null }>`
    select pg_snapshot_xmin(pg_current_snapshot())::text as horizon,
      (select to_json(j) from jobs j where j.id = ${jobId} and (${viewer.admin} or j.owner = ${viewer.subject})) as job`.execute(db);
  const row = result.rows[0];
  return { row: row?.job ? jobRowFromJson(row.job) : undefined, horizon: BigInt(row?.horizon ?? '0') };
}

/**
 * The `id`s of a batch's JSON array parameter as an SQL array, for
 * `id = any(...)` beside the join on the batch: the rows the statement
 * touches are then found through the primary key. Joined only with
 * `json_to_recordset` (which Postgres estimates at 100 rows whatever it
 * holds), the plan a connection caches while a table is small stays a hash
 * join over a sequential scan of the whole table as the table grows: at
 * 6,000 jobs a claim + complete's write statement read 714 buffers for one
 * or two jobs.
 */
export function idsOf(parameter: string, field = 'id'): string {
  return `array(select ${field} from json_to_recordset(${parameter}::json) as k(${field} text))`;
}

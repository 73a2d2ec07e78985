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

/**
 * The strings of a JSON array parameter as rows (`as q(name)`), for a
 * statement that runs a lateral subquery per element. Postgres estimates
 * `unnest` of an array literal at its length but of a parameter at 10
 * rows, so a custom plan looked ten times cheaper than the generic one
 * and the connection planned the statement afresh on every run (the
 * claim batch's queue locks and candidate read: 0.45 and 0.32 ms of
 * planning per batch, more than either took to execute).
 * `json_array_elements_text` is estimated at 100 rows either way: the
 * generic plan costs what a custom one does and is kept.
 */
export function elementsOf(parameter: string): string {
  return `json_array_elements_text(${parameter}::json)`;
}

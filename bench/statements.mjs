// --statements: what the Docket databases spent their time on, from
// pg_stat_statements (reset when the timed repetitions begin), for profiling
// the state service's write path.
import { query } from './postgres.mjs';

const TOP = 25;

/** Forgets every statement seen so far, in every database. */
export async function resetStatements(url) {
  await query(url, 'select pg_stat_statements_reset()');
}

/** The top statements by total execution time in the database of `url`. */
export async function topStatements(url, limit = TOP) {
  const rows = await query(
    url,
    `select calls, total_exec_time, mean_exec_time, rows, shared_blks_hit, shared_blks_read, wal_bytes, query
       from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
      order by total_exec_time desc
      limit $1`,
    [limit],
  );
  return rows.map((row) => ({
    calls: Number(row.calls),
    totalMs: row.total_exec_time,
    meanMs: row.mean_exec_time,
    rows: Number(row.rows),
    sharedBlocksHit: Number(row.shared_blks_hit),
    sharedBlocksRead: Number(row.shared_blks_read),
    walBytes: Number(row.wal_bytes),
    query: row.query,
  }));
}

/** A table (see report/tables.mjs) of one database's top statements. */
export function statementsTable(title, statements) {
  return {
    title,
    headers: ['total ms', 'calls', 'mean ms', 'rows', 'WAL bytes', 'query'],
    numeric: [0, 1, 2, 3, 4],
    rows: statements.map((statement) => [
      statement.totalMs.toFixed(0),
      String(statement.calls),
      statement.meanMs.toFixed(3),
      String(statement.rows),
      String(statement.walBytes),
      statement.query.replace(/\s+/g, ' ').slice(0, 160),
    ]),
  };
}

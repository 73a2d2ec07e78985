import type pg from 'pg';

/**
 * Where a PostgreSQL server is in its history, as one cheap statement reads
 * it: which database system, which timeline, how far its WAL is flushed,
 * whether a synchronous standby confirms its commits, and how far its
 * standbys have flushed. Every field a role may not read is null rather
 * than an error (the standbys' positions need `pg_read_all_stats`, part
 * of `pg_monitor`), and a server in recovery (a standby, or one
 * being promoted) reports only `inRecovery`.
 */
export interface DatabaseLineageRow {
  readonly inRecovery: boolean;
  /** `pg_control_system().system_identifier`, decimal; null if the role may not run it. */
  readonly systemIdentifier: string | null;
  /** The WAL segment being written (`pg_walfile_name(pg_current_wal_lsn())`), whose first 8 hex digits are the timeline; null in recovery. */
  readonly walFile: string | null;
  /** `pg_current_wal_flush_lsn()` as `X/Y`; null in recovery. */
  readonly flushLsn: string | null;
  /** Whether a commit made now waits for a synchronous standby (see {@link SYNCHRONOUS_CONFIRMATION}). */
  readonly synchronous: boolean;
  /** The lowest flush position among streaming standbys, `X/Y`; null without one or without the right to read it. */
  readonly standbyFlushLsn: string | null;
}

/**
 * Whether the session's commits wait for a synchronous standby to confirm
 * them: synchronous standbys are named and `synchronous_commit` asks for
 * them. A commit made so returns only once a named standby confirmed it
 * (it waits, however long, while none is connected), so its walsenders need
 * not be read (that cost 0.06 ms a commit, measured). Patroni names only
 * the standby it would promote.
 *
 * ```sql
 * current_setting('synchronous_standby_names') <> ''
 *   and current_setting('synchronous_commit') in ('on', 'remote_apply', 'remote_write')
 * ```
 */
export const SYNCHRONOUS_CONFIRMATION = `(current_setting('synchronous_standby_names') <> ''
  and current_setting('synchronous_commit') in ('on', 'remote_apply', 'remote_write'))`;

/**
 * Two more columns of the statement that opens every group commit's
 * transaction (`inWriteTransaction`, beside its clock): the primary's WAL
 * flush position now, and whether a commit made now waits for a
 * synchronous standby. The position is an upper bound of every commit
 * that returned before the statement was sent (a commit returns only once
 * its record is flushed, `synchronous_commit` not `off`), so each write
 * transaction bounds those acknowledged before it, at the cost of two
 * function calls in a statement that runs anyway. Null position on a
 * server in recovery.
 *
 * ```sql
 * case when pg_is_in_recovery() then null else pg_current_wal_flush_lsn()::text end as lsn,
 * <SYNCHRONOUS_CONFIRMATION> as synchronous
 * ```
 */
export const WAL_READING_COLUMNS = `case when pg_is_in_recovery() then null else pg_current_wal_flush_lsn()::text end as lsn, ${SYNCHRONOUS_CONFIRMATION} as synchronous`;

/** The columns {@link WAL_READING_COLUMNS} add. */
export interface WalReadingRow {
  readonly lsn: string | null;
  readonly synchronous: boolean;
}

/**
 * Reads the server's {@link DatabaseLineageRow} in one statement.
 *
 * ```sql
 * select pg_is_in_recovery() as "inRecovery",
 *   case when has_function_privilege('pg_control_system()', 'execute')
 *     then (select system_identifier::text from pg_control_system()) end as "systemIdentifier",
 *   case when not pg_is_in_recovery() then pg_walfile_name(pg_current_wal_lsn()) end as "walFile",
 *   case when not pg_is_in_recovery() then pg_current_wal_flush_lsn()::text end as "flushLsn",
 *   <SYNCHRONOUS_CONFIRMATION> as synchronous,
 *   (select min(w.flush_lsn)::text from pg_stat_get_wal_senders() w where w.state = 'streaming') as "standbyFlushLsn"
 * ```
 */
export async function readDatabaseLineage(client: pg.ClientBase | pg.Pool): Promise<DatabaseLineageRow> {
  const { rows } = await client.query<DatabaseLineageRow>(`select pg_is_in_recovery() as "inRecovery",
  case when has_function_privilege('pg_control_system()', 'execute')
    then (select system_identifier::text from pg_control_system()) end as "systemIdentifier",
  case when not pg_is_in_recovery() then pg_walfile_name(pg_current_wal_lsn()) end as "walFile",
  case when not pg_is_in_recovery() then pg_current_wal_flush_lsn()::text end as "flushLsn",
  ${SYNCHRONOUS_CONFIRMATION} as synchronous,
  (select min(w.flush_lsn)::text from pg_stat_get_wal_senders() w where w.state = 'streaming') as "standbyFlushLsn"`);
  const row = rows[0];
  if (!row) throw new Error('the lineage statement returned no row');
  return row;
}

/**
 * The text of a timeline's history file (`pg_wal/<TLI>.history`), or null
 * when the role may not run `pg_read_file` (only superusers may, unless it
 * is granted) or the file is missing (timeline 1 has none).
 *
 * ```sql
 * select case when has_function_privilege('pg_read_file(text, bigint, bigint, boolean)', 'execute')
 *   then pg_read_file($1, 0, 1048576, true) end as history
 * ```
 */
export async function readTimelineHistory(client: pg.ClientBase | pg.Pool, path: string): Promise<string | null> {
  const { rows } = await client.query<{ history: string | null }>(
    `select case when has_function_privilege('pg_read_file(text, bigint, bigint, boolean)', 'execute')
      then pg_read_file($1, 0, 1048576, true) end as history`,
    [path],
  );
  return rows[0]?.history ?? null;
}

/**
 * Which of `ids` are jobs in the database (of any owner, deleted or not).
 *
 * ```sql
 * select id from jobs where id = any($1::text[])
 * ```
 */
export async function existingJobIds(client: pg.ClientBase | pg.Pool, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await client.query<{ id: string }>('select id from jobs where id = any($1::text[])', [ids]);
  return new Set(rows.map((row) => row.id));
}

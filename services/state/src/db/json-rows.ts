import type { JobRow } from './queries/jobs.js';
import type { IncarnationRow } from './queries/workers.js';
import type { WorkerOperationRow } from './queries/worker-operations.js';

/**
 * Rows that a statement returns as JSON (`to_json(row)`, so that one round
 * trip can carry several tables), mapped back to the shapes node-postgres
 * gives for plain rows: timestamps as `Date`, int8 as `bigint` (as the
 * pool parses it, `STATE_TYPE_PARSERS`), bytea from base64. Each mapping
 * lives here once, at the query boundary. `to_json` writes an int8 as a
 * JSON number, which `JSON.parse` rounds above 2^53; every int8 the state
 * service stores stays far below that (fences, revisions, sequences,
 * counters, durations), and the mapping accepts a decimal string as well.
 */
type JsonRow = Record<string, unknown>;

const date = (value: unknown): Date => new Date(value as string);
const nullableDate = (value: unknown): Date | null => (value === null || value === undefined ? null : date(value));
const int8 = (value: unknown): bigint => BigInt(value as number | string);
const nullableInt8 = (value: unknown): bigint | null => (value === null || value === undefined ? null : int8(value));
/** A transaction id stays text, as pg gives xid8 (the one 64-bit type that is not int8). */
const xid8 = (value: unknown): string => String(value);

/** A `jobs` row from `to_json(jobs)`. */
export function jobRowFromJson(row: JsonRow): JobRow {
  return {
    ...(row as unknown as JobRow),
    revision: int8(row['revision']),
    initial_backoff_ms: int8(row['initial_backoff_ms']),
    max_backoff_ms: int8(row['max_backoff_ms']),
    fence: int8(row['fence']),
    event_count: int8(row['event_count']),
    created_xid: xid8(row['created_xid']),
    run_after: nullableDate(row['run_after']),
    created_at: date(row['created_at']),
    updated_at: date(row['updated_at']),
    lease_expires_at: nullableDate(row['lease_expires_at']),
    not_before: nullableDate(row['not_before']),
    signal_count: int8(row['signal_count']),
    signals_done_through: int8(row['signals_done_through']),
    signals_delivered_through: int8(row['signals_delivered_through']),
    attempt_timeout_ms: nullableInt8(row['attempt_timeout_ms']),
    heartbeat_timeout_ms: nullableInt8(row['heartbeat_timeout_ms']),
    attempt_deadline: nullableDate(row['attempt_deadline']),
  };
}

/** A `worker_incarnations` row from `to_json(worker_incarnations)`. */
export function incarnationFromJson(row: JsonRow): IncarnationRow {
  return {
    ...(row as unknown as IncarnationRow),
    generation: int8(row['generation']),
    registered_at: date(row['registered_at']),
    superseded_at: nullableDate(row['superseded_at']),
    last_seen_at: date(row['last_seen_at']),
  };
}

/** A `worker_operations` row from JSON whose `response` is base64. */
export function operationFromJson(row: JsonRow): WorkerOperationRow {
  return {
    ...(row as unknown as WorkerOperationRow),
    response: Buffer.from(row['response'] as string, 'base64'),
    created_at: date(row['created_at']),
    expires_at: date(row['expires_at']),
  };
}

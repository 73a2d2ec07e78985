import type pg from 'pg';
import type { Queryable } from '../database.js';
import { jsonParameter } from '../json-parameter.js';
import { PreparedStatement } from '../prepared-statement.js';
import type { EffectRow } from '../../effects/effect-lifecycle.js';

/** An effect named by its job and the worker's idempotency key. */
export interface EffectKey {
  readonly job_id: string;
  readonly idempotency_key: string;
}

const READ_EFFECTS = new PreparedStatement<EffectRow>(
  'docket_read_effects',
  `select * from job_effects where id = any($1::text[])
   union
   select f.* from json_to_recordset($2::json) as k(job_id text, idempotency_key text)
   join job_effects f on f.job_id = k.job_id and f.idempotency_key = k.idempotency_key`,
);

/**
 * The effects a batch of worker calls names, by id or by (job, key), in
 * one round trip (none when no call names one). The callers hold the
 * jobs' row locks, under which every effect of a job changes.
 */
export async function readEffects(client: pg.ClientBase, ids: readonly string[], keys: readonly EffectKey[]): Promise<EffectRow[]> {
  if (ids.length === 0 && keys.length === 0) return [];
  return READ_EFFECTS.run(client, [[...new Set(ids)], jsonParameter(keys)]);
}

const WRITE_EFFECTS = new PreparedStatement<never>(
  'docket_write_effects',
  `insert into job_effects (id, job_id, kind, idempotency_key, input_digest, state, revision, external_id, recovery,
                           recoveries, cancellation, attempt_id, created_at, updated_at, committed_at)
   select id, job_id, kind, idempotency_key, input_digest, state, revision, external_id, recovery,
          recoveries, cancellation, attempt_id, created_at, updated_at, committed_at
   from json_to_recordset($1::json) as e(
     id text, job_id text, kind text, idempotency_key text, input_digest text, state text, revision bigint,
     external_id text, recovery jsonb, recoveries integer, cancellation text, attempt_id text,
     created_at timestamptz, updated_at timestamptz, committed_at timestamptz)
   on conflict (id) do update set
     state = excluded.state, revision = excluded.revision, external_id = excluded.external_id,
     recovery = excluded.recovery, recoveries = excluded.recoveries, cancellation = excluded.cancellation,
     updated_at = excluded.updated_at, committed_at = excluded.committed_at`,
);

/** Writes new and changed effects (the latest version of each), in one statement. */
export async function writeEffects(client: pg.ClientBase, rows: readonly EffectRow[]): Promise<void> {
  if (rows.length > 0) await WRITE_EFFECTS.run(client, [jsonParameter(rows)]);
}

/**
 * A job's unfinished effects (every one not COMMITTED), oldest first.
 *
 * ```sql
 * select * from job_effects where job_id = $1 and state <> 'COMMITTED' order by created_at, id limit $2
 * ```
 */
export async function listUnfinishedEffects(db: Queryable, jobId: string, limit: number): Promise<EffectRow[]> {
  return db
    .selectFrom('job_effects')
    .selectAll()
    .where('job_id', '=', jobId)
    .where('state', '<>', 'COMMITTED')
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

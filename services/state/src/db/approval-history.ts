import pg from 'pg';
import { DocketError } from '@docket/contracts';
import type { Logger } from '@docket/service-kit';
import { SchemaRefusal, summarise } from './migrator.js';
import { openPool, type DatabasePooling } from './pool.js';
import { EMPTY_SCHEMA, SCHEMA_SHAPE_QUERY, schemaDifferences, searchPathFor, type SchemaShape } from './schema-snapshot.js';
import { SCHEMA_SNAPSHOT } from './schema-snapshot.generated.js';
import { SQLSTATE, sqlStateOf } from './sqlstate.js';

/** The schema that holds the approval history, in whichever database it lives. */
export const APPROVAL_HISTORY_SCHEMA = 'docket_approval_history';
/** The role that owns it; the state service's role may only INSERT and SELECT. */
export const APPROVAL_HISTORY_OWNER = 'docket_approval_history';

/** A decision as burned: its digest is spent once and for all. */
export interface BurnedDecision {
  /** The DecideApproval request digest (SPEC section 2), 64 lowercase hex. */
  readonly digest: string;
  readonly approval_id: string;
  readonly job_id: string;
  readonly decision: 'ALLOW' | 'DENY';
  /** The subject that decided (the owner, or an admin). */
  readonly decided_by: string;
}

/**
 * Creates the history if it is missing, idempotently and under an advisory
 * lock (every state replica runs it at startup), for the role named by the
 * setting `docket.history_writer`. The table is owned by
 * {@link APPROVAL_HISTORY_OWNER} when the role running this may create
 * that role (a superuser, or CREATEROLE), PUBLIC has no rights on it, the
 * writer gets INSERT and SELECT only, and triggers refuse UPDATE, DELETE
 * and TRUNCATE for everyone, superusers included. A history that already
 * exists is left exactly as it is, so an administrator may prepare it once
 * (see docs/approvals.md) and run the state service under a role that
 * could not have created it.
 */
const ENSURE_HISTORY = `
do $$
declare
  writer text := current_setting('docket.history_writer');
begin
  perform pg_advisory_xact_lock(hashtext('${APPROVAL_HISTORY_SCHEMA}'));
  if exists (select from pg_tables where schemaname = '${APPROVAL_HISTORY_SCHEMA}' and tablename = 'decisions') then
    return;
  end if;
  create schema if not exists ${APPROVAL_HISTORY_SCHEMA};
  create table ${APPROVAL_HISTORY_SCHEMA}.decisions (
    digest text primary key check (digest ~ '^[0-9a-f]{64}$'),
    approval_id text not null unique,
    job_id text not null,
    decision text not null check (decision in ('ALLOW', 'DENY')),
    decided_by text not null,
    decided_at timestamptz not null default now()
  );
  create function ${APPROVAL_HISTORY_SCHEMA}.refuse_rewrite() returns trigger language plpgsql as $body$
  begin
    raise exception 'the approval history is append-only' using errcode = 'insufficient_privilege';
  end $body$;
  create trigger refuse_update_delete before update or delete on ${APPROVAL_HISTORY_SCHEMA}.decisions
    for each row execute function ${APPROVAL_HISTORY_SCHEMA}.refuse_rewrite();
  create trigger refuse_truncate before truncate on ${APPROVAL_HISTORY_SCHEMA}.decisions
    for each statement execute function ${APPROVAL_HISTORY_SCHEMA}.refuse_rewrite();
  if not exists (select from pg_roles where rolname = '${APPROVAL_HISTORY_OWNER}') then
    begin
      create role ${APPROVAL_HISTORY_OWNER} nologin;
    exception
      when insufficient_privilege then return;
      -- Another database of the same cluster created it meanwhile.
      when duplicate_object or unique_violation then null;
    end;
  end if;
  begin
    execute 'alter schema ${APPROVAL_HISTORY_SCHEMA} owner to ${APPROVAL_HISTORY_OWNER}';
    execute 'alter table ${APPROVAL_HISTORY_SCHEMA}.decisions owner to ${APPROVAL_HISTORY_OWNER}';
    execute 'alter function ${APPROVAL_HISTORY_SCHEMA}.refuse_rewrite() owner to ${APPROVAL_HISTORY_OWNER}';
    execute 'revoke all on ${APPROVAL_HISTORY_SCHEMA}.decisions from public';
    execute format('grant usage on schema ${APPROVAL_HISTORY_SCHEMA} to %I', writer);
    execute format('grant select, insert on ${APPROVAL_HISTORY_SCHEMA}.decisions to %I', writer);
  exception when insufficient_privilege then
    null;
  end;
end $$;
`;

/**
 * Prepares the approval history in the database `client` is connected to,
 * for `writer` (the role the state service's history connections use).
 */
export async function ensureApprovalHistory(client: pg.ClientBase, writer: string): Promise<void> {
  await client.query('begin');
  try {
    await client.query(`select set_config('docket.history_writer', $1, true)`, [writer]);
    await client.query(ENSURE_HISTORY);
    await client.query('commit');
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
}

/**
 * Refuses a history that differs from this build's schema snapshot (a
 * dropped or disabled rewrite-refusing trigger, a changed column, a missing
 * check), naming the first differences; reads only the catalogs and changes
 * nothing. `expected` is the snapshot's by default.
 */
export async function checkApprovalHistorySchema(client: pg.ClientBase, expected: SchemaShape = SCHEMA_SNAPSHOT.approval_history): Promise<void> {
  const differences = schemaDifferences(expected, await readApprovalHistoryShape(client), `${APPROVAL_HISTORY_SCHEMA}.`);
  if (differences.length > 0) {
    throw new SchemaRefusal(`the approval history schema differs from this build's: ${summarise(differences)}; refusing to start`);
  }
}

/** The shape of the history schema as it stands ({@link SCHEMA_SHAPE_QUERY}, one catalog query). */
export async function readApprovalHistoryShape(client: pg.ClientBase): Promise<SchemaShape> {
  await client.query('begin read only');
  try {
    await client.query(`select set_config('search_path', $1, true)`, [searchPathFor(APPROVAL_HISTORY_SCHEMA)]);
    const { rows } = await client.query<{ shape: SchemaShape }>(SCHEMA_SHAPE_QUERY, [APPROVAL_HISTORY_SCHEMA]);
    await client.query('commit');
    return rows[0]?.shape ?? EMPTY_SCHEMA;
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
}

/** What a startup learns about where the history stands. */
export interface ApprovalHistoryPosture {
  /** Whether the table is owned by another role than the state service's. */
  readonly separateOwner: boolean;
  /** Whether the state service's role is a superuser (which could disable any trigger). */
  readonly writerIsSuperuser: boolean;
}

/**
 * The approval history (SPEC section 7): an append-only store of spent
 * decision digests outside the job tables' rewrite domain. It has its own
 * connections (`DOCKET_APPROVAL_DATABASE_URL`, by default the state
 * database under a separate schema and owner), so a burn commits on its
 * own, before the job's transaction journals the decision: a journal
 * write that fails afterwards leaves the digest burned (fail closed), and
 * restoring the job tables from an older backup cannot release it.
 */
export class ApprovalHistory {
  private constructor(private readonly pool: pg.Pool) {}

  /**
   * Connects, creates the history if needed, refuses one that differs from
   * the schema snapshot ({@link SchemaRefusal}), and reports its posture.
   */
  static async open(connectionString: string, logger: Logger, pooling: DatabasePooling = 'session'): Promise<ApprovalHistory> {
    const pool = openPool({ connectionString, max: 4, applicationName: 'docket-approval-history', pooling, logger });
    const history = new ApprovalHistory(pool);
    try {
      const posture = await history.ensure();
      const fields = { separate_owner: posture.separateOwner, writer_is_superuser: posture.writerIsSuperuser };
      if (posture.writerIsSuperuser || !posture.separateOwner) {
        logger.warn('approval history is protected by its triggers only: run the state service under an ordinary role', fields);
      } else {
        logger.info('approval history ready', fields);
      }
      return history;
    } catch (error) {
      await pool.end();
      throw error;
    }
  }

  private async ensure(): Promise<ApprovalHistoryPosture> {
    const client = await this.pool.connect();
    try {
      const { rows } = await client.query<{ writer: string }>('select current_user as writer');
      await ensureApprovalHistory(client, rows[0]?.writer ?? '');
      await checkApprovalHistorySchema(client);
    } finally {
      client.release();
    }
    const { rows } = await this.pool.query<{ separate_owner: boolean; superuser: boolean }>(
      `select (select tableowner from pg_tables where schemaname = $1 and tablename = 'decisions') <> current_user as separate_owner,
              (select rolsuper from pg_roles where rolname = current_user) as superuser`,
      [APPROVAL_HISTORY_SCHEMA],
    );
    return { separateOwner: rows[0]?.separate_owner === true, writerIsSuperuser: rows[0]?.superuser === true };
  }

  /**
   * Burns a decision, committed before this resolves. APPROVAL_SPENT when
   * the digest, or any decision of the same approval, is already there.
   */
  async burn(decision: BurnedDecision): Promise<void> {
    try {
      await this.pool.query(
        `insert into ${APPROVAL_HISTORY_SCHEMA}.decisions (digest, approval_id, job_id, decision, decided_by) values ($1, $2, $3, $4, $5)`,
        [decision.digest, decision.approval_id, decision.job_id, decision.decision, decision.decided_by],
      );
    } catch (error) {
      if (sqlStateOf(error) === SQLSTATE.uniqueViolation) throw approvalSpent();
      throw error;
    }
  }

  /** Whether any decision of `approvalId` is burned. */
  async isSpent(approvalId: string): Promise<boolean> {
    const { rows } = await this.pool.query(`select 1 from ${APPROVAL_HISTORY_SCHEMA}.decisions where approval_id = $1`, [approvalId]);
    return rows.length > 0;
  }

  /** The burned decisions with these digests, by digest. */
  async findDigests(digests: readonly string[]): Promise<Map<string, BurnedDecision>> {
    if (digests.length === 0) return new Map();
    const { rows } = await this.pool.query<BurnedDecision>(
      `select digest, approval_id, job_id, decision, decided_by from ${APPROVAL_HISTORY_SCHEMA}.decisions where digest = any($1::text[])`,
      [[...new Set(digests)]],
    );
    return new Map(rows.map((row) => [row.digest, row]));
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** ALREADY_EXISTS, APPROVAL_SPENT: the decision was spent before. */
export function approvalSpent(): DocketError {
  return new DocketError('APPROVAL_SPENT', 'this approval has already been decided');
}

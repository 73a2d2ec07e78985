// Dependencies at scale (SPEC section 14, docs/dependencies.md): the
// ending of a parent with DEPENDENCY_CHILDREN children (default 10,000)
// settles them all in its own transaction, so the worker's ReportOutcome
// call takes the whole release. Measured: a success that releases them
// (WAITING -> QUEUED, each journaled `job.dependencies_met`) and a
// permanent failure that cancels them (DEPENDENCY_FAILED), each the time
// of the ReportOutcome call, checked afterwards by SQL; and fan-in,
// DEPENDENCY_PARENTS parents (default 1,000) whose children each wait for
// 100 of them, claimed and completed 16 at a time, next to as many jobs
// without children completed the same way. The children are admitted with
// SubmitJobs, 1,000 per call. After each ending it prints the statements
// Postgres ran, by total time (pg_stat_statements; DEPENDENCY_TRACK_ALL=1
// counts the statements of triggers too). In-process, not in the default
// set: `npm run bench -- --only dependencies`.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { FailureClass } from '@docket/proto/docket/common/v1/failure_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { clientWith, runConcurrently, startSystem } from './support.mjs';

const CHILDREN = Number(process.env.DEPENDENCY_CHILDREN ?? 10_000);
const PARENTS = Number(process.env.DEPENDENCY_PARENTS ?? 1_000);
const PARENTS_PER_CHILD = 100;
const ITEMS_PER_CALL = 1_000;
const IN_FLIGHT = 16;

const key = (label) => `dep-${label}-${randomBytes(9).toString('base64url')}`;

/** Admits `count` jobs of `queue` through SubmitJobs, `spec(index)` each; returns their ids in order. */
async function admitMany(admission, queue, count, spec = () => ({})) {
  const ids = [];
  for (let from = 0; from < count; from += ITEMS_PER_CALL) {
    const items = [];
    for (let index = from; index < Math.min(count, from + ITEMS_PER_CALL); index += 1) items.push({ idempotencyKey: key('job'), queue, input: { index }, ...spec(index) });
    const { results } = await admission.submitJobs({ items });
    for (const result of results) {
      if (result.result.case !== 'submitted') throw new Error(`an item was refused: ${result.result.value?.message}`);
      ids.push(result.result.value.job.id);
    }
  }
  return ids;
}

/** Claims everything claimable on `queue` for `worker`, 100 per call. */
async function claimAll(execution, worker, queue, count) {
  const assignments = [];
  while (assignments.length < count) {
    const claimed = await execution.claimJobs({ workerIncarnation: worker, queues: [queue], maxJobs: 100, operationId: key('claim') });
    if (claimed.assignments.length === 0) throw new Error(`only ${assignments.length} of ${count} jobs were claimable`);
    assignments.push(...claimed.assignments);
  }
  return assignments;
}

const attemptOf = (assignment) => ({ attemptId: assignment.authority.attemptId, fence: assignment.authority.fence, workerIncarnation: assignment.authority.workerIncarnation });
const success = { case: 'success', value: { result: { ok: true } } };
const failure = { case: 'failure', value: { failureClass: FailureClass.INVALID_INPUT, message: 'bench' } };

/** The statements Postgres ran since the last reset, by total time (pg_stat_statements). */
async function printStatements(sql, title) {
  const { rows } = await sql.query(
    `select calls, round(total_exec_time)::int as total_ms, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as query
     from pg_stat_statements where query not like '%pg_stat_statements%' order by total_exec_time desc limit 8`,
  );
  console.log(`\n${title} (pg_stat_statements, by total time):`);
  for (const row of rows) console.log(`  ${String(row.total_ms).padStart(6)} ms ${String(row.calls).padStart(5)} calls ${String(row.rows).padStart(6)} rows  ${row.query}`);
}

async function countByStatus(sql, ids) {
  const { rows } = await sql.query('select status, count(*)::int as jobs from jobs where id = any($1) group by status', [ids]);
  return Object.fromEntries(rows.map((row) => [row.status, row.jobs]));
}

export async function benchDependencies(options) {
  const system = await startSystem(['state', 'admission', 'execution'], options);
  const sql = new pg.Client({ connectionString: system.databaseUrl });
  try {
    await sql.connect();
    await sql.query('create extension if not exists pg_stat_statements');
    if (process.env.DEPENDENCY_TRACK_ALL) {
      // The statements triggers run count too (this bench's own PostgreSQL).
      await sql.query("alter system set pg_stat_statements.track = 'all'");
      await sql.query('select pg_reload_conf()');
    }
    const admission = clientWith(AdmissionService, system.urls.admission[0], await system.token('bench-deps', 'user'));
    const execution = clientWith(ExecutionService, system.urls.execution[0], await system.token('bench-deps-worker', 'worker'));
    const rows = [];

    for (const [ending, outcome, expected] of [
      ['succeeds', success, 'QUEUED'],
      ['fails', failure, 'CANCELLED'],
    ]) {
      const queue = `deps-${randomBytes(3).toString('hex')}`;
      const [parent] = await admitMany(admission, queue, 1);
      const children = await admitMany(admission, `${queue}-children`, CHILDREN, () => ({ dependsOn: [parent] }));
      const { workerIncarnation } = await execution.registerWorker({ workerName: `bench-${queue}`, queues: [queue], maxConcurrency: 10 });
      const [assignment] = await claimAll(execution, workerIncarnation, queue, 1);
      await sql.query('select pg_stat_statements_reset()');
      const started = performance.now();
      await execution.reportOutcome({ attempt: attemptOf(assignment), operationId: key('outcome'), outcome });
      const ms = performance.now() - started;
      await printStatements(sql, `the statements while the parent ${ending}`);
      const counts = await countByStatus(sql, children);
      if (counts[expected] !== CHILDREN) throw new Error(`after the parent ${ending}: ${JSON.stringify(counts)}`);
      rows.push({ case: `a parent with ${CHILDREN.toLocaleString('en')} children ${ending}: ReportOutcome`, ms: ms.toFixed(0), 'children per s': Math.round(CHILDREN / (ms / 1000)).toLocaleString('en') });
    }

    for (const withChildren of [false, true]) {
      const queue = `fan-in-${randomBytes(3).toString('hex')}`;
      const parents = await admitMany(admission, queue, PARENTS);
      const children = withChildren
        ? await admitMany(admission, `${queue}-children`, Math.ceil(PARENTS / PARENTS_PER_CHILD), (index) => ({ dependsOn: parents.slice(index * PARENTS_PER_CHILD, (index + 1) * PARENTS_PER_CHILD) }))
        : [];
      const { workerIncarnation } = await execution.registerWorker({ workerName: `bench-${queue}`, queues: [queue], maxConcurrency: PARENTS });
      const assignments = await claimAll(execution, workerIncarnation, queue, PARENTS);
      const started = performance.now();
      await runConcurrently(assignments.length, IN_FLIGHT, (index) =>
        execution.reportOutcome({ attempt: attemptOf(assignments[index]), operationId: key('outcome'), outcome: success }),
      );
      const ms = performance.now() - started;
      if (withChildren) {
        const counts = await countByStatus(sql, children);
        if (counts.QUEUED !== children.length) throw new Error(`after the fan-in: ${JSON.stringify(counts)}`);
      }
      rows.push({
        case: withChildren ? `fan-in: ${PARENTS.toLocaleString('en')} parents of ${children.length} children (${PARENTS_PER_CHILD} each) complete, ${IN_FLIGHT} in flight` : `the same ${PARENTS.toLocaleString('en')} completions without children`,
        ms: ms.toFixed(0),
        'outcomes per s': Math.round(PARENTS / (ms / 1000)).toLocaleString('en'),
      });
    }
    return rows;
  } finally {
    await sql.end().catch(() => undefined);
    await system.stop();
  }
}

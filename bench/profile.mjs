// `node bench/profile.mjs [jobs] [callers]`: where a Docket service's CPU
// goes. Starts the durable PostgreSQL and state + admission + execution
// with `node --cpu-prof`, submits `jobs` jobs with `callers` concurrent
// SubmitJob calls, then runs them through claim + complete (16 loops, one
// job per claim), stops the services (which writes the profiles) and prints
// each service's CPU time per job and its heaviest functions by self time,
// with pg_stat_statements' top statements (PROFILE_TOP=N prints N
// functions per service; DOCKET_*_BATCH* variables pass through to the
// services). The load runs in this process;
// the services are separate processes, so their profiles hold only their
// own work. PROFILE_SESSION=1 makes the claims and reports on the worker
// session (one ExecutionService/Work stream) instead of unary calls;
// PROFILE_ONE_PROCESS=1 runs the services in one process (services/one-process);
// PROFILE_IN_PROCESS=1 makes the claims and reports with the state service's
// own worker transactions in this process, no call at all
// (docket/state-in-process.mjs), profiles this process during them and
// prints the worker batches' sizes;
// PROFILE_PLANS=1 turns on pg_stat_statements' planning times and prints
// the statements PostgreSQL planned most (a statement planned on every run
// has a custom plan);
// PROFILE_ITEMS=N submits with SubmitJobs of N items per call instead of
// SubmitJob, and PROFILE_CLAIMS=0 leaves the claims out, so that the
// profiles hold admission alone.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { WorkSessionClient } from '@docket/worker-sdk';
import { printCpuProfiles } from './cpu-profile-summary.mjs';
import { clientWith } from './docket/clients.mjs';
import { launchDocket } from './docket/instance.mjs';
import { openStateInProcess } from './docket/state-in-process.mjs';
import { runConcurrently } from './load/closed-loop.mjs';
import { query, startDurablePostgres } from './postgres.mjs';

const jobs = Number(process.argv[2] ?? 4000);
const callers = Number(process.argv[3] ?? 16);
const items = Number(process.env.PROFILE_ITEMS ?? 1);
const claims = process.env.PROFILE_CLAIMS !== '0';
const profiles = mkdtempSync(join(tmpdir(), 'docket-profile-'));
const postgres = await startDurablePostgres();
const databaseUrl = await postgres.createDatabase('profile');
await query(databaseUrl, 'create extension if not exists pg_stat_statements').catch(() => {});
const docket = await launchDocket({
  root: new URL('..', import.meta.url).pathname,
  databaseUrl,
  nodeOptions: ['--cpu-prof', `--cpu-prof-dir=${profiles}`],
  oneProcess: process.env.PROFILE_ONE_PROCESS === '1',
  // Batching settings under test pass through from this process's environment.
  env: Object.fromEntries(Object.entries(process.env).filter(([name]) => /^DOCKET_(ADMIT|CLAIM|REPORT|STATE)_BATCH/.test(name))),
});
const operationId = () => `op_${randomBytes(12).toString('base64url')}`;
try {
  if (process.env.PROFILE_PLANS === '1') await trackPlanning();
  const admission = clientWith(AdmissionService, docket.urls.admission[0], await docket.token('profile-user', 'user'));
  const job = (index) => ({ idempotencyKey: `profile-${index}-${randomBytes(8).toString('hex')}`, queue: 'profile', input: { index } });
  const submitted =
    items > 1
      ? await runConcurrently(Math.ceil(jobs / items), callers, (call) => admission.submitJobs({ items: Array.from({ length: items }, (_, item) => job(call * items + item)) }))
      : await runConcurrently(jobs, callers, (index) => admission.submitJob(job(index)));
  console.log(`${items > 1 ? `SubmitJobs of ${items}` : 'SubmitJob'}: ${jobs} jobs, ${callers} callers, ${Math.round((jobs / submitted.elapsedMs) * 1000)}/s`);
  if (claims) await claimAndComplete();
  await printStatements();
} finally {
  await docket.stop();
  await postgres.stop();
}

printCpuProfiles(profiles, claims ? { count: jobs * 3, name: 'call (3 calls per job: submit, claim, report)' } : { count: jobs, name: 'job submitted' });

/** The submitted jobs through 16 loops of ClaimJobs (one job) and ReportOutcome. */
async function claimAndComplete() {
  const plan = await query(
    databaseUrl,
    `explain (analyze, buffers) select j.* from unnest('{profile}'::text[]) as q(queue) cross join lateral (
       select * from jobs where status = 'QUEUED' and queue = q.queue and (run_after is null or run_after <= now())
         and id <> all('{}'::text[]) order by priority desc, created_at, id limit 16 for update skip locked) j
     order by j.priority desc, j.created_at, j.id limit 16`,
  );
  console.log(plan.map((row) => row['QUERY PLAN']).join('\n'));
  const batches = { claims: [0, 0], reports: [0, 0] };
  const inProcess = process.env.PROFILE_IN_PROCESS === '1' ? openStateInProcess(databaseUrl, 'profile-worker', (path, size) => {
    batches[path][0] += 1;
    batches[path][1] += size;
  }) : undefined;
  const execution = inProcess ?? clientWith(ExecutionService, docket.urls.execution[0], await docket.token('profile-worker', 'worker'));
  const { workerIncarnation } = await execution.registerWorker({ workerName: 'profile', queues: ['profile'], maxConcurrency: 32 });
  const session = process.env.PROFILE_SESSION === '1' ? new WorkSessionClient(execution) : undefined;
  const calls = session?.client ?? execution;
  const profiler = inProcess ? await profileThisProcess() : undefined;
  const cpuBefore = process.cpuUsage();
  let done = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (done < jobs) {
        const { assignments } = await calls.claimJobs({ workerIncarnation, maxJobs: 1, wait: { seconds: 1n }, operationId: operationId() });
        for (const { authority } of assignments) {
          await calls.reportOutcome({ attempt: { attemptId: authority.attemptId, fence: authority.fence, workerIncarnation }, operationId: operationId(), outcome: { case: 'success', value: {} } });
          done += 1;
        }
      }
    }),
  );
  session?.close();
  const elapsedMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  await profiler?.stop();
  await inProcess?.close();
  console.log(`claim + complete${session ? ' (worker session)' : inProcess ? " (the state service's transactions in this process, no calls)" : ''}: ${done} jobs, 16 loops, ${Math.round((done / elapsedMs) * 1000)}/s`);
  if (!inProcess) return;
  for (const [path, [count, size]] of Object.entries(batches)) console.log(`  ${path}: ${count} batches, ${(size / Math.max(1, count)).toFixed(1)} per batch`);
  console.log(`  this process (profiled): ${Math.round((cpu.user + cpu.system) / done)} us of CPU per job (${Math.round(cpu.system / done)} us of it in the kernel)`);
}

/** Profiles this process (node:inspector) until `stop()`, which writes the profile beside the services' ones. */
async function profileThisProcess() {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return {
    async stop() {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(join(profiles, 'CPU.in-process.cpuprofile'), JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/** Turns pg_stat_statements' planning times on (this server is the profile's own). */
async function trackPlanning() {
  await query(databaseUrl, 'alter system set pg_stat_statements.track_planning = on');
  await query(databaseUrl, 'select pg_reload_conf()');
}

async function printStatements() {
  if (process.env.PROFILE_PLANS === '1') {
    console.table(
      await query(
        databaseUrl,
        `select calls, plans, round(total_plan_time::numeric, 1) as plan_ms, round(total_exec_time::numeric, 1) as exec_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 70) as query
         from pg_stat_statements where plans > 0 order by total_plan_time desc limit 8`,
      ),
    );
  }
  const statements = await query(
    databaseUrl,
    `select calls, round(total_exec_time::numeric, 1) as total_ms, round(mean_exec_time::numeric, 3) as mean_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 90) as query
     from pg_stat_statements order by total_exec_time desc limit 12`,
  ).catch(() => []);
  console.table(statements);
  console.table(await query(databaseUrl, `select relname, n_tup_upd, n_tup_hot_upd, n_dead_tup from pg_stat_user_tables where relname in ('jobs', 'attempts', 'idempotency_records')`));
}

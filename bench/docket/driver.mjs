// Docket as a load generator sees it: SubmitJob (and SubmitJobs) on admission; RegisterWorker,
// ClaimJobs (long-polling, wait 1 s) and ReportOutcome on execution, each
// with a fresh operation id, exactly what the worker SDK does.
//
// Consumer layouts (see bench/load/claim-loops.mjs): `workers` incarnations
// registered with max_concurrency `handlersPerWorker`; one claim loop per
// handler asking for 1 job, or (batched) one loop per incarnation asking for
// as many jobs as it has idle handlers. A layout with a `policy` first sets
// it on the queue (SetQueuePolicy, as an admin): the flow-control scenario.
// A layout with `session` makes the same calls on one ExecutionService/Work
// stream per generator process (the worker SDK's WorkSessionClient, what
// createWorker uses by default) instead of a unary RPC each.
//
// `worker(queue, {concurrency, handler})` is the worker SDK itself
// (createWorker, its defaults: the worker session, batched claims of the
// idle handlers), for the fixed-rate scenario; `pendingJobs` and `ledger`
// read the deployment's database from the orchestrator, after the fact.
import { randomBytes } from 'node:crypto';
import { createClient } from '@docket/client';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { createWorker, WorkSessionClient } from '@docket/worker-sdk';
import { query } from '../postgres.mjs';
import { runClaimLoops } from '../load/claim-loops.mjs';
import { runConcurrently } from '../load/closed-loop.mjs';
import { jobInput, jobKey } from '../load/jobs.mjs';
import { clientWith } from './clients.mjs';
import { openStateInProcess } from './state-in-process.mjs';

const SEED_CALLERS = 64;
const CLAIM_WAIT = { seconds: 1n };

const operationId = () => `op_${randomBytes(16).toString('base64url')}`;

/** Parent side: nothing to prepare, the state service migrates its database at start. */
export async function prepare() {}

/** Parent side: how many jobs of `queue` have not succeeded (yet). */
export async function pendingJobs(databaseUrl, queue) {
  const [row] = await query(databaseUrl, `select count(*)::int as pending from jobs where queue = $1 and status <> 'SUCCEEDED'`, [queue]);
  return row.pending;
}

/**
 * Parent side: every job of `queue` as {id, done, doneAt (epoch ms of the
 * last change, the success for a done job), attempts, where: 'done',
 * 'queued' (waiting for a claim or a retry), 'running' or 'other'}.
 */
export async function ledger(databaseUrl, queue) {
  const rows = await query(
    databaseUrl,
    `select id, status = 'SUCCEEDED' as done, extract(epoch from updated_at) * 1000 as "doneAt", attempt_count as attempts,
            case when status = 'SUCCEEDED' then 'done' when status in ('QUEUED', 'RETRY_WAIT') then 'queued' when status = 'RUNNING' then 'running' else 'other' end as "where"
       from jobs where queue = $1`,
    [queue],
  );
  return rows.map((row) => ({ ...row, doneAt: Number(row.doneAt) }));
}

/** Generator side: clients for `system` ({admissionUrl, executionUrl, userToken, workerToken, adminToken}). */
export async function open(system) {
  const admission = clientWith(AdmissionService, system.admissionUrl, system.userToken);
  const unary = clientWith(ExecutionService, system.executionUrl, system.workerToken);
  const session = new WorkSessionClient(unary);
  /** The state service's transactions in this process (state-in-process.mjs), opened by the first case that asks for them. */
  let inProcess;
  const stateInProcess = () => (inProcess ??= openStateInProcess(system.databaseUrl, 'bench-worker'));
  /** The Docket client with coalesced submissions (`coalesceSubmissions`), made by the first submitter that asks for it. */
  let coalescing;
  /**
   * Resolves with the admitted job's id: SubmitJob, or with the shape
   * `coalesced` the Docket client's `submit()` sharing SubmitJobs calls
   * with the submissions made meanwhile (see SubmitCoalescer).
   */
  const submitter = (queue, shape) => {
    if (shape === 'in-process') {
      const state = stateInProcess();
      return async (key, input) => (await state.submitJob({ idempotencyKey: key, queue, input })).job?.id;
    }
    if (shape !== 'coalesced') return async (key, input) => (await admission.submitJob({ idempotencyKey: key, queue, input })).job?.id;
    coalescing ??= createClient({ admissionUrl: system.admissionUrl, token: system.userToken, coalesceSubmissions: true, retry: { tries: 1 } });
    return async (key, input) => (await coalescing.submit({ queue, input }, { idempotencyKey: key })).job.id;
  };
  /** SubmitJobs of the whole batch; a refused item fails the measurement. */
  const bulkSubmitter = (queue) => async (keys, inputs) => {
    const { results } = await admission.submitJobs({ items: keys.map((key, index) => ({ idempotencyKey: key, queue, input: inputs[index] })) });
    const refused = results.find((result) => result.result.case !== 'submitted');
    if (refused) throw new Error(`SubmitJobs refused an item: ${refused.result.value?.message ?? 'no result'}`);
  };
  return {
    options: { transport: 'Connect gRPC, one HTTP/2 connection per service', claimWaitSeconds: 1 },
    submitter,
    bulkSubmitter,
    async seed(queue, count, prefix) {
      const submit = submitter(queue);
      await runConcurrently(count, SEED_CALLERS, (index) => submit(jobKey(prefix, index), jobInput(index)));
    },
    async consumer(queue, total, spec) {
      if (spec.policy) {
        const { maxConcurrency, rateLimit } = spec.policy;
        await clientWith(AdmissionService, system.admissionUrl, system.adminToken).setQueuePolicy({
          queue,
          maxConcurrency,
          rateLimit: { jobs: rateLimit.jobs, per: { seconds: BigInt(rateLimit.perSeconds) } },
        });
      }
      // In process: the state service's own worker transactions, called in this process (state-in-process.mjs).
      const state = spec.inProcess ? stateInProcess() : undefined;
      const execution = state ?? (spec.session ? session.client : unary);
      const incarnations = [];
      for (let index = 0; index < spec.workers; index += 1) {
        const { workerIncarnation } = await (state ?? unary).registerWorker({
          workerName: `bench-${queue}-${index}`,
          queues: [queue],
          maxConcurrency: spec.handlersPerWorker,
        });
        incarnations.push(workerIncarnation);
      }
      return {
        run: () =>
          runClaimLoops({
            total,
            spec,
            claim: async (worker, maxJobs, signal) => {
              const request = { workerIncarnation: incarnations[worker], maxJobs, wait: CLAIM_WAIT, operationId: operationId() };
              return (await execution.claimJobs(request, { signal })).assignments;
            },
            complete: ({ authority }) =>
              execution.reportOutcome({
                attempt: { attemptId: authority.attemptId, fence: authority.fence, workerIncarnation: authority.workerIncarnation },
                operationId: operationId(),
                outcome: { case: 'success', value: {} },
              }),
          }),
      };
    },
    /**
     * A createWorker worker of `concurrency` handlers on `queue`, each job's
     * input handed to `handler`; started before it resolves. The SDK's
     * warnings and errors (the restart's failed calls, which it retries)
     * are counted in `notes()`, not printed.
     */
    async worker(queue, { concurrency, handler }) {
      const notes = { warnings: 0, errors: 0, first: undefined };
      const note = (kind) => (message) => {
        notes[kind] += 1;
        notes.first ??= String(message).slice(0, 200);
      };
      const worker = createWorker({
        url: system.executionUrl,
        token: system.workerToken,
        name: `bench-${queue}`,
        queues: [queue],
        concurrency,
        logger: { info() {}, warn: note('warnings'), error: note('errors') },
        handler: (job) => handler(job.input),
      });
      await worker.start();
      return { stop: () => worker.stop(), notes: () => ({ ...notes, stats: { ...worker.stats } }), options: { createWorker: `concurrency ${concurrency}, otherwise the SDK's defaults (worker session, claims of every idle handler)` } };
    },
    async close() {
      session.close();
      await inProcess?.close();
    },
  };
}

// graphile-worker 0.17 on its own database: `addJob` through WorkerUtils for
// submissions; `run()` for consumption, once with its defaults and once with
// its batching options (a local queue that fetches and locks jobs for the
// pool, and batched completions). Both runs use concurrency 16 (16
// handlers) on a warm pg.Pool of 20 connections (graphile's advice is at
// least concurrency + 2); jobs carry no job key. The timed part includes
// run() starting its pool of workers (a few milliseconds: the pool is warm
// and the schema already migrated). Completed jobs are deleted, so a run is
// done when none of its task's jobs is left. Before a consumer runs, the
// jobs of every other task are deleted (untimed): the SubmitJob scenarios
// leave theirs queued, and graphile-worker's workers read past queued jobs
// of tasks they do not handle, so 12,000 of them took its claims from
// about 2,000 to about 420 jobs/s, depending on which scenarios ran first.
import pg from 'pg';
import { Logger, makeWorkerUtils, run, runMigrations } from 'graphile-worker';
import { jobInput } from '../load/jobs.mjs';
import { settlementWatch } from '../load/settled.mjs';
import { wallClock } from '../generators/protocol.mjs';

const silent = new Logger(() => () => {});
const INSERT_BATCH = 1000;

/** `run()` options per consumer style; `preset.worker` holds 0.17's batching settings. */
export const RUN_OPTIONS = {
  defaults: { concurrency: 16 },
  batched: {
    concurrency: 16,
    preset: { worker: { localQueue: { size: 17 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
  },
};

/** Parent side, once per run: installs graphile-worker's schema. */
export async function prepare(databaseUrl) {
  await runMigrations({ connectionString: databaseUrl, logger: silent });
}

/** Generator side: a pool of `connections` and WorkerUtils on it. */
export async function open(system, { connections }) {
  const pgPool = new pg.Pool({ connectionString: system.databaseUrl, max: connections });
  const report = (error) => console.error(`graphile-worker pool: ${error.message}`);
  pgPool.on('error', report);
  pgPool.on('connect', (client) => client.on('error', report));
  const utils = await makeWorkerUtils({ pgPool, logger: silent });
  return {
    options: { pgPool: connections, run: RUN_OPTIONS, logger: 'silent', noHandleSignals: true },
    submitter: (task) => (_key, input) => utils.addJob(task, input),
    async seed(task, count) {
      for (let done = 0; done < count; done += INSERT_BATCH) {
        await utils.addJobs(Array.from({ length: Math.min(INSERT_BATCH, count - done) }, (_, i) => ({ identifier: task, payload: jobInput(done + i) })));
      }
    },
    async consumer(task, total, spec) {
      await pgPool.query(
        `delete from graphile_worker._private_jobs where task_id not in (select id from graphile_worker._private_tasks where identifier = $1)`,
        [task],
      );
      const watch = settlementWatch(total, async () => {
        const { rows } = await pgPool.query(
          `select count(*)::int as left from graphile_worker._private_jobs j
             join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = $1`,
          [task],
        );
        return rows[0].left === 0;
      });
      return {
        async run() {
          const startedAt = wallClock();
          const runner = await run({
            ...RUN_OPTIONS[spec.style],
            pgPool,
            logger: silent,
            noHandleSignals: true,
            taskList: { [task]: async () => watch.handled() },
          });
          const endedAt = await watch.settledAt();
          await runner.stop();
          return { count: total, startedAt, endedAt, latencies: [] };
        },
      };
    },
    async close() {
      await utils.release();
      await pgPool.end();
    },
  };
}

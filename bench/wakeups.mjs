// How soon the long-polls wake, across state replicas: the latencies the
// tests in test/execution-claims.test.ts and test/stream-job-events.test.ts
// only bound for correctness ("well before the wait runs out"). Two state
// replicas; admission replica 1 and the writes below go through state
// replica 1, while the execution and events replicas read through state
// replica 0, so every wake-up below crosses replicas by Postgres NOTIFY.
// The execution replica re-checks only once a minute, so no figure is its
// re-check timer.
// - ClaimJobs woken by SubmitJob: from SubmitJob's answer to the waiting
//   claim's answer carrying that job;
// - ClaimJobs woken at run_after: from a job's run_after (no commit happens
//   then) to the claim's answer, woken by the state service's
//   next_claimable_at hint;
// - commit-to-subscriber: from TransitionJob through state replica 1 to the
//   page frame carrying that event at a StreamJobEvents subscriber.
// In-process, not in the default set: `npm run bench -- --only wakeups`.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { durationFromMs, timestampFromMs } from '@bufbuild/protobuf/wkt';
import { AdmissionService } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { EventService } from '@docket/proto/docket/events/v1/event_service_pb.js';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { clientWith, quantile, startSystem } from './support.mjs';

/** The longest any claim waits: a wake-up that does not come shows as a failed measurement. */
const CLAIM_WAIT = durationFromMs(20_000);
/** How far ahead of its submission each run_after lies. */
const RUN_AFTER_AHEAD_MS = 300;

const operationId = () => `op_${randomBytes(16).toString('base64url')}`;
const key = (label) => `wakeups-${label}-${randomBytes(12).toString('hex')}`;

/** Median, p99 and max of `latencies` (ms), as a row named `name`. */
const latencyRow = (name, latencies) => ({
  name,
  'median ms': quantile(latencies, 0.5).toFixed(2),
  'p99 ms': quantile(latencies, 0.99).toFixed(2),
  'max ms': Math.max(...latencies).toFixed(2),
});

export async function benchWakeups(options = {}) {
  const rounds = Number(process.env.BENCH_WAKEUP_ROUNDS ?? (options.quick ? 20 : 100));
  const system = await startSystem(['state', 'admission', 'execution', 'events'], {
    ...options,
    replicas: { state: 2, admission: 2 },
    env: { DOCKET_CLAIM_RECHECK_MS: '60000' },
  });
  try {
    const admission = clientWith(AdmissionService, system.urls.admission[1], await system.token('bench'));
    const execution = clientWith(ExecutionService, system.urls.execution[0], await system.token('bench-waker', 'worker'));
    const state = clientWith(StateService, system.urls.state[1], await system.token('docket-internal', 'service'));
    const events = clientWith(EventService, system.urls.events[0], await system.token('bench'));
    const rows = [];

    // A claim waiting on an empty queue, woken by an admission.
    const queue = `wake-${randomBytes(3).toString('hex')}`;
    const { workerIncarnation } = await execution.registerWorker({ workerName: `waker-${queue}`, queues: [queue], maxConcurrency: rounds + 1 });
    const claimOne = async () => {
      const { assignments } = await execution.claimJobs({ workerIncarnation, maxJobs: 1, wait: CLAIM_WAIT, operationId: operationId() });
      const answeredAt = performance.now();
      if (assignments.length !== 1) throw new Error('a waiting claim ran out of time: nothing woke it');
      return { jobId: assignments[0].envelope.jobId, answeredAt };
    };
    const admissionWakes = [];
    for (let round = 0; round < rounds; round += 1) {
      const claiming = claimOne();
      await sleep(50); // the claim is waiting by now
      const { job } = await admission.submitJob({ idempotencyKey: key('admitted'), queue });
      const admittedAt = performance.now();
      const claimed = await claiming;
      if (claimed.jobId !== job.id) throw new Error('the woken claim took another job');
      admissionWakes.push(claimed.answeredAt - admittedAt);
    }
    rows.push(latencyRow(`ClaimJobs woken by SubmitJob on the other state replica (${rounds} rounds; re-check 60 s)`, admissionWakes));

    // A claim woken at run_after, when nothing commits: by the state service's hint.
    const runAfterRounds = Math.max(5, Math.round(rounds / 5));
    const runAfterWakes = [];
    for (let round = 0; round < runAfterRounds; round += 1) {
      const runAfterQueue = `run-after-${round}-${randomBytes(3).toString('hex')}`;
      const registered = await execution.registerWorker({ workerName: `run-after-${runAfterQueue}`, queues: [runAfterQueue], maxConcurrency: 1 });
      const runAfterMs = Date.now() + RUN_AFTER_AHEAD_MS;
      const { job } = await admission.submitJob({ idempotencyKey: key('run-after'), queue: runAfterQueue, runAfter: timestampFromMs(runAfterMs) });
      const { assignments } = await execution.claimJobs({ workerIncarnation: registered.workerIncarnation, maxJobs: 1, wait: CLAIM_WAIT, operationId: operationId() });
      const answeredAt = Date.now();
      if (assignments[0]?.envelope?.jobId !== job.id) throw new Error('the claim did not wake at run_after');
      runAfterWakes.push(answeredAt - runAfterMs);
    }
    rows.push(latencyRow(`ClaimJobs woken at run_after by next_claimable_at, after run_after (${runAfterRounds} rounds)`, runAfterWakes));

    // Commit-to-subscriber across state replicas.
    const { job: liveJob } = await admission.submitJob({ idempotencyKey: key('live'), queue: `live-${queue}` });
    const abort = new AbortController();
    const frames = events.streamJobEvents({ jobId: liveJob.id }, { signal: abort.signal })[Symbol.asyncIterator]();
    const nextPage = async () => {
      for (;;) {
        const { value, done } = await frames.next();
        if (done) throw new Error('the live tail ended');
        if (value.frame.case === 'page') return value.frame.value;
      }
    };
    try {
      await nextPage();
      const latencies = [];
      for (let round = 0; round < rounds; round += 1) {
        const started = performance.now();
        const written = await state.transitionJob({ caller: { subject: 'bench' }, jobId: liveJob.id, events: [{ type: 'worker.step', payload: { round } }] });
        const page = await nextPage();
        if (page.events.at(-1)?.sequence !== written.lastSequence) throw new Error('the live tail skipped an event');
        latencies.push(performance.now() - started);
      }
      rows.push(latencyRow(`commit-to-subscriber across state replicas, TransitionJob -> page frame (${rounds} rounds)`, latencies));
    } finally {
      abort.abort();
    }
    return rows;
  } finally {
    await system.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.table(await benchWakeups());

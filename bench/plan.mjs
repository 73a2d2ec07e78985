// The measurements: scenarios, each a list of groups (one variant, e.g.
// "SubmitJob, 16 callers"), each group a list of cases (one system doing
// that variant). The orchestrator interleaves systems within every
// repetition: rep 1 runs every case of a group, system after system, then
// the next group; rep 2 starts over. Ratios are only taken inside a group
// (or between the two backlog groups), never across runs.

/** Display names; `docket*` systems are the ones ratios are taken for. */
export const SYSTEM_NAMES = {
  handwritten: 'hand-written SQL',
  pgboss: 'pg-boss 10.4',
  graphile: 'graphile-worker 0.17',
  docket: 'Docket',
  'docket-baseline': 'Docket (baseline)',
  'docket-one': 'Docket (one process)',
};

export const isDocket = (system) => system.startsWith('docket');

/** Scenarios measured by default, in order. */
export const DEFAULT_SCENARIOS = ['submit', 'claim', 'claim-batched', 'backlog', 'e2e'];
/** In-process benchmarks (and fixed-rate and replicas, which fork their own generators), run after the scenarios above. */
export const EXTRA_SCENARIOS = ['calls', 'journal', 'streams', 'reaper', 'wakeups', 'renewals', 'queue-stats', 'dependencies', 'fixed-rate', 'replicas'];
/** The in-process benchmarks a default run includes (the others only when named with --only). */
export const DEFAULT_EXTRAS = ['calls'];

export const HANDLERS = 16;
/** The claim shapes, as consumer specs (see bench/load/claim-loops.mjs and the drivers). */
export const ONE_PER_CLAIM = { style: 'loops', workers: 1, handlersPerWorker: HANDLERS, batched: false };
const SIXTEEN_WORKERS = { style: 'loops', workers: HANDLERS, handlersPerWorker: 1, batched: false };
const BATCHED = { style: 'loops', workers: 1, handlersPerWorker: HANDLERS, batched: true };
/** Docket only: the same calls on the worker session (one ExecutionService/Work stream) instead of unary RPCs. */
const ONE_PER_CLAIM_SESSION = { ...ONE_PER_CLAIM, session: true };
const BATCHED_SESSION = { ...BATCHED, session: true };
/** Docket only, this checkout: the state service's worker transactions called in the generator, no call at all (the worker path's floor, bench/docket/state-in-process.mjs). */
const ONE_PER_CLAIM_IN_PROCESS = { ...ONE_PER_CLAIM, inProcess: true };
/**
 * Flow control on, bounds that never bind (SPEC section 13): what a claim
 * pays for a queue policy (the queue's advisory lock, the room read, the
 * rate bucket spent), beside the same layout without one.
 */
const FLOW_POLICY = { maxConcurrency: 100_000, rateLimit: { jobs: 1_000_000, perSeconds: 1 } };
const PGBOSS_WORK = { style: 'work', workers: HANDLERS, batchSize: 1 };
const GRAPHILE_DEFAULTS = { style: 'defaults' };
const GRAPHILE_BATCHED = { style: 'batched' };

/** The queue of every backlog measurement, in a deployment of its own per depth. */
export const BACKLOG_QUEUE = 'backlog';

/**
 * Sizes for a run: `jobs` per measurement (--jobs), fewer for one caller and
 * for pg-boss work() (it manages 32 jobs/s by design); warm-up jobs per
 * generator process; the two backlog depths and how many jobs a backlog
 * measurement drains.
 */
export function sizesFor({ quick, jobs }) {
  const perMeasurement = jobs ?? (quick ? 500 : 4000);
  const backlogSmall = 2000;
  return {
    jobs: perMeasurement,
    oneCallerJobs: Math.max(100, Math.round(perMeasurement / 4)),
    workJobs: Math.max(50, Math.round(perMeasurement / 20)),
    warmUp: quick ? 20 : 1000,
    backlogSmall,
    backlogLarge: quick ? 20_000 : 200_000,
    backlogDrain: Math.min(perMeasurement, backlogSmall),
  };
}

/** The two backlog groups: their keys (also the suffix of their deployments' instance ids) and depths. */
const backlogDepths = (sizes) => [
  { key: 'backlog-small', depth: sizes.backlogSmall },
  { key: 'backlog-large', depth: sizes.backlogLarge },
];

/**
 * The backlog deployments to fill before the timed repetitions: each holds
 * its depth minus one drain, and every measurement first tops it up by one
 * drain (untimed), so each starts with exactly its depth queued.
 */
export function backlogPrefills(sizes, instances) {
  const depths = Object.fromEntries(backlogDepths(sizes).map(({ key, depth }) => [key, depth]));
  return instances
    .filter((instance) => depths[instance.split('@')[1]] !== undefined)
    .map((instance) => ({ instance, count: depths[instance.split('@')[1]] - sizes.backlogDrain }))
    .filter(({ count }) => count > 0);
}

/**
 * A submission case: `callers` closed-loop callers of one system (of its
 * deployment `instance`, by default the system's own).
 */
export const submitCase = (sizes, system, label, shape, callers, total, batch = 0, { instance = system } = {}) => ({
  system,
  instance,
  label,
  callers,
  jobs: total,
  spec: { shape, ...(batch ? { jobsPerCall: batch } : {}) },
  generators: (ctx) => [
    { script: 'submit.mjs', config: { system: ctx.connect(instance), queue: ctx.queue(), shape, total, callers, keyPrefix: ctx.keyPrefix, warmUp: sizes.warmUp, batch } },
  ],
});

/** Jobs per call of the bulk submission group (SubmitJobs, pg-boss insert, one multi-row statement). */
const BULK_BATCH = 100;

/**
 * A claim + complete case: `total` jobs seeded (untimed) into a fresh queue,
 * or into `queue` on `instance` (a backlog deployment), then drained by 16 handlers.
 */
export const consumeCase = (sizes, system, label, spec, total, { instance = system, queue, warmUp = sizes.warmUp } = {}) => ({
  system,
  instance,
  label,
  callers: HANDLERS,
  jobs: total,
  spec,
  generators: (ctx) => [
    {
      script: 'consume.mjs',
      config: { system: ctx.connect(instance), queue: queue ?? ctx.queue(), spec, total, seed: total, keyPrefix: ctx.keyPrefix, warmUp, connections: HANDLERS + 4 },
    },
  ],
});

/** End to end: 16 submitting callers and 16 handlers at once, in two processes, on one empty queue. */
const endToEndCase = (sizes, system, label, shape, total) => ({
  system,
  label,
  callers: HANDLERS,
  jobs: total,
  spec: { producers: { callers: HANDLERS, shape }, consumers: BATCHED },
  generators: (ctx) => {
    const queue = ctx.queue();
    const connection = ctx.connect(system);
    return [
      { script: 'submit.mjs', config: { system: connection, queue, shape, total, callers: HANDLERS, keyPrefix: ctx.keyPrefix, warmUp: sizes.warmUp } },
      { script: 'consume.mjs', config: { system: connection, queue, spec: BATCHED, total, seed: 0, keyPrefix: `${ctx.keyPrefix}-c`, warmUp: sizes.warmUp, connections: HANDLERS + 4 } },
    ];
  },
});

/** Every scenario's groups for `sizes` and the Docket systems present (`docket`, maybe `docket-baseline`). */
export function buildScenarios(sizes, docketSystems) {
  // Case by case across the Docket systems (Docket, then its baseline, for
  // each case), so that the two columns of one case run side by side.
  const forDocket = (make) => {
    const bySystem = docketSystems.map(make);
    // A case only this checkout has (the floor) has no twin in the baseline.
    return bySystem[0].flatMap((_, index) => bySystem.flatMap((cases) => (cases[index] ? [cases[index]] : [])));
  };
  const submitGroup = (callers, total, withPeers) => ({
    name: `SubmitJob, ${callers} caller${callers === 1 ? '' : 's'}`,
    key: `submit-${callers}`,
    cases: [
      submitCase(sizes, 'handwritten', 'idempotent INSERT', 'insert', callers, total),
      submitCase(sizes, 'handwritten', 'job + first event (CTE)', 'cte', callers, total),
      ...(withPeers ? [submitCase(sizes, 'pgboss', 'send()', undefined, callers, total), submitCase(sizes, 'graphile', 'addJob()', undefined, callers, total)] : []),
      ...forDocket((docket) => [
        submitCase(sizes, docket, 'SubmitJob', undefined, callers, total),
        // A job per client call too, made by many callers at once: what a producer gets from the client's coalesceSubmissions.
        ...(callers > 1 ? [submitCase(sizes, docket, 'client submit(), coalesceSubmissions', 'coalesced', callers, total)] : []),
        // This checkout only: the same submissions checked by admission's code and admitted by the state service's, in the generator (the floor).
        ...(callers === 16 && docket === 'docket' ? [submitCase(sizes, docket, "SubmitJob's admission in the generator (no calls: the floor)", 'in-process', callers, total)] : []),
      ]),
    ],
  });
  return {
    submit: [
      submitGroup(1, sizes.oneCallerJobs, false),
      submitGroup(16, sizes.jobs, true),
      submitGroup(64, sizes.jobs, true),
      {
        name: `${BULK_BATCH} jobs per call, 16 callers`,
        key: 'submit-bulk-16',
        cases: [
          submitCase(sizes, 'handwritten', 'jobs + first events, one statement', 'bulk', 16, sizes.jobs * 4, BULK_BATCH),
          submitCase(sizes, 'pgboss', 'insert()', undefined, 16, sizes.jobs * 4, BULK_BATCH),
          ...forDocket((docket) => [submitCase(sizes, docket, 'SubmitJobs', undefined, 16, sizes.jobs * 4, BULK_BATCH)]),
        ],
      },
    ],
    claim: [
      {
        name: 'claim + complete, one job per claim, 16 handlers',
        key: 'claim-one',
        cases: [
          consumeCase(sizes, 'handwritten', 'SKIP LOCKED claim + complete, 16 loops', ONE_PER_CLAIM, sizes.jobs),
          consumeCase(sizes, 'pgboss', 'fetch() + complete() loops, 16 x 1', ONE_PER_CLAIM, sizes.jobs),
          consumeCase(sizes, 'pgboss', 'work(), 16 workers x batch 1, polling 0.5 s', PGBOSS_WORK, sizes.workJobs, { warmUp: HANDLERS }),
          consumeCase(sizes, 'graphile', 'run(), defaults, concurrency 16', GRAPHILE_DEFAULTS, sizes.jobs),
          ...forDocket((docket) => [
            consumeCase(sizes, docket, '1 worker x 16 handlers, max_jobs 1', ONE_PER_CLAIM, sizes.jobs),
            consumeCase(sizes, docket, '1 worker x 16 handlers, max_jobs 1, worker session', ONE_PER_CLAIM_SESSION, sizes.jobs),
            consumeCase(sizes, docket, '16 workers x 1 handler', SIXTEEN_WORKERS, sizes.jobs),
            consumeCase(sizes, docket, '1 worker x 16 handlers, max_jobs 1, queue policy (concurrency + rate, not binding)', { ...ONE_PER_CLAIM, policy: FLOW_POLICY }, sizes.jobs),
            ...(docket === 'docket' ? [consumeCase(sizes, docket, "1 worker x 16 handlers, max_jobs 1, state's transactions in the generator (no calls: the floor)", ONE_PER_CLAIM_IN_PROCESS, sizes.jobs)] : []),
          ]),
        ],
      },
    ],
    'claim-batched': [
      {
        name: 'claim + complete, batched claims, 16 handlers',
        key: 'claim-batched',
        cases: [
          consumeCase(sizes, 'handwritten', 'SKIP LOCKED claim LIMIT idle handlers', BATCHED, sizes.jobs),
          consumeCase(sizes, 'pgboss', 'fetch(batchSize: idle handlers) + complete()', BATCHED, sizes.jobs),
          consumeCase(sizes, 'graphile', 'run(), localQueue 17, completeJobBatchDelay 0', GRAPHILE_BATCHED, sizes.jobs),
          ...forDocket((docket) => [
            consumeCase(sizes, docket, '1 worker x 16 handlers, max_jobs = idle handlers', BATCHED, sizes.jobs),
            consumeCase(sizes, docket, '1 worker x 16 handlers, max_jobs = idle handlers, worker session', BATCHED_SESSION, sizes.jobs),
          ]),
        ],
      },
    ],
    backlog: backlogDepths(sizes).map(({ depth, key }) => ({
      name: `claim + complete with ${depth.toLocaleString('en-US')} queued`,
      key,
      cases: ['handwritten', ...docketSystems].map((system) =>
        consumeCase(sizes, system, isDocket(system) ? '1 worker x 16 handlers, max_jobs 1' : 'SKIP LOCKED claim + complete, 16 loops', ONE_PER_CLAIM, sizes.backlogDrain, {
          instance: `${system}@${key}`,
          queue: BACKLOG_QUEUE,
        }),
      ),
    })),
    e2e: [
      {
        name: 'end to end: 16 producers and 16 handlers together',
        key: 'e2e',
        cases: [
          endToEndCase(sizes, 'handwritten', 'CTE submit + SKIP LOCKED claim/complete', 'cte', sizes.jobs),
          ...forDocket((docket) => [endToEndCase(sizes, docket, 'SubmitJob + ClaimJobs/ReportOutcome', undefined, sizes.jobs)]),
        ],
      },
    ],
  };
}

/**
 * The cases of one group in the order repetition `rep` (from 1) runs them:
 * each repetition starts one case later, so that no case always runs right
 * after the same one. A write-heavy case leaves PostgreSQL flushing and
 * checkpointing for whatever comes next, which shows most in the
 * latency-bound rows (one caller). Every other repetition runs them
 * backwards, so that of two cases side by side (Docket and its baseline
 * on one case) each runs first as often as the other: on a machine whose
 * load drifts, the one that always ran second would be favoured.
 */
export function inRepetitionOrder(cases, rep) {
  const shift = (rep - 1) % Math.max(cases.length, 1);
  const rotated = [...cases.slice(shift), ...cases.slice(0, shift)];
  return rep % 2 === 0 ? rotated.reverse() : rotated;
}

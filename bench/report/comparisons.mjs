// Ratios between rows of one run: every Docket row against every other
// system in its group (and against the baseline checkout), the backlog
// groups against each other, and the goals the issue set, each checked.
import { isDocket, SYSTEM_NAMES } from '../plan.mjs';

const ONE_PER_CLAIM = '1 worker x 16 handlers, max_jobs 1';
const ONE_PER_CLAIM_SESSION = `${ONE_PER_CLAIM}, worker session`;
const BATCHED = '1 worker x 16 handlers, max_jobs = idle handlers';

/**
 * The goals. `docket` picks the Docket row (its system is each Docket
 * system in turn), `versus` the row it is divided by (`system: 'self'` is
 * the same Docket system). `min`/`max` bound the ratio; neither means the
 * figure is reported, not judged. A goal without `versus` bounds the
 * Docket row's own figure by `maxValue` or `minValue`, in `unit` (default
 * us: the CPU budgets); `goal` may be a function of that row (a label that
 * names the run's rate).
 */
export const GOALS = [
  { goal: 'SubmitJob 16 callers / pg-boss send(), jobs/s', min: 1.0, metric: 'jobsPerSecond', docket: { groupKey: 'submit-16', label: 'SubmitJob' }, versus: { groupKey: 'submit-16', system: 'pgboss', label: 'send()' } },
  { goal: 'SubmitJob 16 callers / graphile-worker addJob(), jobs/s', min: 2.0, metric: 'jobsPerSecond', docket: { groupKey: 'submit-16', label: 'SubmitJob' }, versus: { groupKey: 'submit-16', system: 'graphile', label: 'addJob()' } },
  { goal: 'SubmitJob 16 callers / hand-written idempotent INSERT, jobs/s', min: 0.4, metric: 'jobsPerSecond', docket: { groupKey: 'submit-16', label: 'SubmitJob' }, versus: { groupKey: 'submit-16', system: 'handwritten', label: 'idempotent INSERT' } },
  { goal: 'SubmitJobs 100/call 16 callers / hand-written jobs + first events in one statement', min: 0.5, metric: 'jobsPerSecond', docket: { groupKey: 'submit-bulk-16', label: 'SubmitJobs' }, versus: { groupKey: 'submit-bulk-16', system: 'handwritten' } },
  { goal: 'SubmitJobs 100/call 16 callers / pg-boss insert() of 100', min: 0.5, metric: 'jobsPerSecond', docket: { groupKey: 'submit-bulk-16', label: 'SubmitJobs' }, versus: { groupKey: 'submit-bulk-16', system: 'pgboss' } },
  { goal: 'SubmitJob 1 caller p50 (ms; ratio to hand-written INSERT p50)', metric: 'p50Ms', showValue: true, docket: { groupKey: 'submit-1', label: 'SubmitJob' }, versus: { groupKey: 'submit-1', system: 'handwritten', label: 'idempotent INSERT' } },
  { goal: 'claim+complete, 1 job/claim, 16 handlers / graphile-worker defaults', min: 0.5, metric: 'jobsPerSecond', docket: { groupKey: 'claim-one', label: ONE_PER_CLAIM }, versus: { groupKey: 'claim-one', system: 'graphile' } },
  { goal: 'claim+complete, 1 job/claim, 16 handlers / pg-boss fetch() loops', min: 4, metric: 'jobsPerSecond', docket: { groupKey: 'claim-one', label: ONE_PER_CLAIM }, versus: { groupKey: 'claim-one', system: 'pgboss', label: 'fetch() + complete() loops, 16 x 1' } },
  { goal: 'claim+complete, 1 job/claim, 16 handlers / hand-written SQL (reported)', metric: 'jobsPerSecond', docket: { groupKey: 'claim-one', label: ONE_PER_CLAIM }, versus: { groupKey: 'claim-one', system: 'handwritten' } },
  { goal: 'claim+complete, 1 job/claim, 16 handlers, worker session / graphile-worker defaults', min: 1.0, metric: 'jobsPerSecond', docket: { groupKey: 'claim-one', label: ONE_PER_CLAIM_SESSION }, versus: { groupKey: 'claim-one', system: 'graphile' } },
  { goal: 'batched claims / graphile-worker batched', min: 0.8, metric: 'jobsPerSecond', docket: { groupKey: 'claim-batched', label: BATCHED }, versus: { groupKey: 'claim-batched', system: 'graphile' } },
  { goal: 'Docket services CPU per job, SubmitJob 16 callers (us)', maxValue: 300, metric: 'serviceCpuUsPerJob', docket: { groupKey: 'submit-16', label: 'SubmitJob' } },
  { goal: 'Docket services CPU per job, claim+complete 1 job/claim, unary (us)', maxValue: 400, metric: 'serviceCpuUsPerJob', docket: { groupKey: 'claim-one', label: ONE_PER_CLAIM } },
  { goal: 'Docket services CPU per job, claim+complete 1 job/claim, worker session (us)', maxValue: 150, metric: 'serviceCpuUsPerJob', docket: { groupKey: 'claim-one', label: ONE_PER_CLAIM_SESSION } },
  { goal: 'claim+complete with the large backlog / with 2,000 queued', min: 0.8, metric: 'jobsPerSecond', docket: { groupKey: 'backlog-large' }, versus: { groupKey: 'backlog-small', system: 'self' } },
  { goal: 'end to end / hand-written SQL doing the same', min: 0.6, metric: 'jobsPerSecond', docket: { groupKey: 'e2e' }, versus: { groupKey: 'e2e', system: 'handwritten' } },
  // The fixed-rate scenario (bench/fixed-rate.mjs): its own figures, no ratio.
  {
    goal: (row) => `fixed rate ${row ? row.offeredPerSecond.toLocaleString('en-US') : '1,200'}/s: completions keep pace (completed/s before the restart / offered)`,
    minValue: 0.95,
    unit: 'x',
    metric: 'paceBeforeRestart',
    docket: { groupKey: 'fixed-rate' },
  },
  { goal: 'fixed rate: pickup p99 (submit to handler start, before the restart)', maxValue: 500, unit: 'ms', metric: 'p99Ms', docket: { groupKey: 'fixed-rate' } },
  { goal: 'fixed rate: back at the offered rate after a PostgreSQL restart (3 s in a row at >= 95%)', maxValue: 10, unit: 's', metric: 'recoverySeconds', docket: { groupKey: 'fixed-rate' } },
  { goal: 'fixed rate: nothing lost (acknowledged, not completed after the drain)', maxValue: 0, unit: 'jobs', metric: 'lost', docket: { groupKey: 'fixed-rate' } },
];

const matches = (row, selector, system) =>
  row.groupKey === selector.groupKey && row.system === system && (selector.label === undefined || row.label === selector.label);

/** Every Docket row against every non-Docket row of its group, and against the baseline's same row. */
export function ratioRows(rows) {
  const ratios = [];
  const push = (docket, versus, name = `${SYSTEM_NAMES[versus.system]}: ${versus.label}`) =>
    ratios.push({
      group: docket.group,
      docket: `${docket.systemName}: ${docket.label}`,
      versus: name,
      docketJobsPerSecond: docket.jobsPerSecond,
      versusJobsPerSecond: versus.jobsPerSecond,
      ratio: docket.jobsPerSecond / versus.jobsPerSecond,
      p99Ratio: docket.p99Ms && versus.p99Ms ? docket.p99Ms / versus.p99Ms : undefined,
    });
  for (const docket of rows.filter((row) => isDocket(row.system))) {
    for (const versus of rows.filter((row) => row.groupKey === docket.groupKey && !isDocket(row.system))) push(docket, versus);
    if (docket.system === 'docket') {
      const baseline = rows.find((row) => row.groupKey === docket.groupKey && row.system === 'docket-baseline' && row.label === docket.label);
      if (baseline) push(docket, baseline);
    }
    if (docket.groupKey === 'backlog-large') {
      const small = rows.find((row) => row.groupKey === 'backlog-small' && row.system === docket.system && row.label === docket.label);
      if (small) push(docket, small, `${small.systemName}: ${small.group}`);
    }
  }
  return ratios;
}

/** Each goal evaluated for each Docket system present: {goal, target, results: {system: {ratio, value, met}}}. */
export function goalRows(rows) {
  const docketSystems = [...new Set(rows.filter((row) => isDocket(row.system)).map((row) => row.system))];
  return GOALS.map((goal) => {
    const results = {};
    for (const system of docketSystems) {
      const docket = rows.find((row) => matches(row, goal.docket, system));
      if (!goal.versus) {
        const value = docket?.[goal.metric];
        if (value !== undefined && value !== null) {
          const met = (goal.maxValue === undefined || value <= goal.maxValue) && (goal.minValue === undefined || value >= goal.minValue);
          results[system] = { value, unit: goal.unit ?? 'us', met };
        }
        continue;
      }
      const versus = rows.find((row) => matches(row, goal.versus, goal.versus.system === 'self' ? system : goal.versus.system));
      if (!docket || !versus || !docket[goal.metric] || !versus[goal.metric]) continue;
      const ratio = docket[goal.metric] / versus[goal.metric];
      const met = goal.min !== undefined ? ratio >= goal.min : goal.max !== undefined ? ratio <= goal.max : undefined;
      results[system] = { ratio, value: goal.showValue ? docket[goal.metric] : undefined, met };
    }
    const unit = goal.unit ?? 'us';
    const bound = (value) => (unit === 'x' ? `${value.toFixed(2)}x` : `${value} ${unit}`);
    const target =
      goal.min !== undefined
        ? `>= ${goal.min.toFixed(2)}x`
        : goal.max !== undefined
          ? `<= ${goal.max}x`
          : goal.maxValue !== undefined
            ? `<= ${bound(goal.maxValue)}`
            : goal.minValue !== undefined
              ? `>= ${bound(goal.minValue)}`
              : 'reported';
    const label = typeof goal.goal === 'function' ? goal.goal(rows.find((row) => matches(row, goal.docket, docketSystems[0]))) : goal.goal;
    return { goal: label, target, results };
  });
}

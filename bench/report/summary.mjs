// From raw measurements to table rows: one row per case (group x system x
// label) with the medians over repetitions of throughput, p50 and p99.
import { median } from '../stats.mjs';
import { SYSTEM_NAMES } from '../plan.mjs';
import { medianCpuPerJob, serviceCpu } from './cpu-per-job.mjs';

/**
 * One measurement's figures from its generators' results: from the first
 * generator's start to the last one's end, the last one's count (end to
 * end: from the first submit to the last completion, jobs completed), the
 * first one's latencies (end to end: SubmitJob while the workers run).
 */
export function measurementFigures(results) {
  const { startedAt } = results[0];
  const { endedAt, count } = results.at(-1);
  const elapsedMs = endedAt - startedAt;
  return {
    count,
    elapsedMs,
    jobsPerSecond: (count / elapsedMs) * 1000,
    p50Ms: results[0].p50Ms,
    p99Ms: results[0].p99Ms,
  };
}

/** A stable identity for a case across repetitions. */
export const caseKey = ({ groupKey, system, label }) => `${groupKey}|${system}|${label}`;

/** Median rows, in the order cases were first measured. */
export function summarize(measurements) {
  const byCase = new Map();
  for (const measurement of measurements) {
    const key = caseKey(measurement);
    if (!byCase.has(key)) byCase.set(key, []);
    byCase.get(key).push(measurement);
  }
  return [...byCase.values()].map((reps) => {
    const [first] = reps;
    return {
      scenario: first.scenario,
      group: first.group,
      groupKey: first.groupKey,
      system: first.system,
      systemName: SYSTEM_NAMES[first.system],
      label: first.label,
      callers: first.callers,
      jobs: first.jobs,
      reps: reps.length,
      jobsPerSecond: median(reps.map((rep) => rep.jobsPerSecond)),
      p50Ms: median(reps.map((rep) => rep.p50Ms)),
      p99Ms: median(reps.map((rep) => rep.p99Ms)),
      cpuUsPerJob: medianCpuPerJob(reps),
      serviceCpuUsPerJob: serviceCpu(medianCpuPerJob(reps)),
    };
  });
}

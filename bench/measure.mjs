// One measurement of one case, as every forked-generator scenario takes it:
// run the case's generators (bench/generator-host.mjs) with the machine's
// CPU read from /proc around the timed part, turn their results into
// figures (jobs/s, p50/p99) and CPU per job by process, print one line.
// A measurement that fails is returned with its error, never thrown: the
// run goes on and reports it FAILED.
import { runGenerators } from './generator-host.mjs';
import { cpuPerJob } from './report/cpu-per-job.mjs';
import { measurementFigures } from './report/summary.mjs';

/** A measurement that takes longer than this is stopped and reported as failed. */
export const MEASUREMENT_TIMEOUT_MS = 10 * 60_000;

/**
 * Runs `testCase` (a case of bench/plan.mjs) in `context` ({connect, queue,
 * keyPrefix}); `servicePids` are the Docket deployment's pids by service
 * (`{}` for the other systems). `detail(cpu, figures)`, when given, adds
 * fields of the caller's own to the measurement (e.g. CPU per replica).
 * Resolves with `{...identity, ...figures, cpuUsPerJob, spec, generators}`
 * or `{...identity, error}`, and prints `name` with its outcome after
 * `prefix()` (the run's elapsed time).
 */
export async function measureCase({ testCase, context, identity, name, servicePids, detail, prefix = () => '' }) {
  try {
    let cpu;
    const onTimed = (before, after, generatorPids) => (cpu = { before, after, generatorPids });
    const results = await runGenerators(testCase.generators(context), { timeoutMs: MEASUREMENT_TIMEOUT_MS, onTimed });
    const figures = measurementFigures(results);
    const cpuUsPerJob = cpuPerJob(cpu, servicePids, figures.count);
    const latency = figures.p50Ms === null || figures.p50Ms === undefined ? '' : `  p50 ${figures.p50Ms.toFixed(2)} ms  p99 ${figures.p99Ms.toFixed(2)} ms`;
    console.log(`${prefix()}  ${name}: ${Math.round(figures.jobsPerSecond)} jobs/s${latency}`);
    return { ...identity, ...figures, cpuUsPerJob, ...detail?.(cpu, figures), spec: testCase.spec, generators: results };
  } catch (error) {
    console.log(`${prefix()}  ${name}: FAILED ${error.message.split('\n').slice(0, 6).join(' | ')}`);
    return { ...identity, error: error.message };
  }
}

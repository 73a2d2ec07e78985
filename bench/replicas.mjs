// A replica curve (issue 37): what more processes of the stateless services
// (admission, execution) and of state buy on this machine, each
// configuration reached through ONE address per service, the front of
// `docket dev --replicas` (nginx behind HAProxy's port switch, started by
// @docket/cli's own layOutFront and startFront, via launchDocket's
// `front: 'nginx'`), plus the 1/1/1 deployment without a front so that the
// front's own cost shows.
// `npm run bench -- --only replicas`.
//
// Two cases per configuration, the specs of the default scenarios:
// SubmitJob at 16 closed-loop callers (the `submit` scenario's case) and
// claim + complete, one job per claim, one worker of 16 handlers, unary
// (the `claim` scenario's case). Each configuration has a database of its
// own on the run's server; its processes run only while it is measured
// (launched before its two cases, stopped after), so that no idle replica
// of another configuration shares the 2 cores. Repetitions interleave the
// configurations as the other scenarios interleave systems
// (inRepetitionOrder); the report gives medians.
//
// CPU per job from /proc around each timed part: PostgreSQL, the load
// generator, the front (nginx and the port switch) and each replica on its
// own, and every process of the machine together; times jobs/s that is
// cores, which says where the curve ends: the machine's cores, or one
// process (PostgreSQL, nginx, a replica).
import { randomBytes } from 'node:crypto';
import { launchDocket } from './docket/instance.mjs';
import { measureCase } from './measure.mjs';
import { consumeCase, HANDLERS, ONE_PER_CLAIM, sizesFor, submitCase, inRepetitionOrder, SYSTEM_NAMES } from './plan.mjs';
import { cpuPerJobOfProcesses, isPostgres, medianCpuPerJob } from './report/cpu-per-job.mjs';
import { caseKey, summarize } from './report/summary.mjs';
import { databaseName, docketConnection } from './systems.mjs';

export const REPLICAS_SCENARIO = 'replicas';

/** The services a configuration names, in the order of its label (admission/execution/state). */
const SERVICES = ['admission', 'execution', 'state'];

/** The default configurations, as BENCH_REPLICAS spells them: `direct` is 1/1/1 without nginx. */
const DEFAULT_CONFIGURATIONS = 'direct,1/1/1,2/2/1,3/3/1,1/1/2,3/3/2';

/**
 * The configurations to measure, from BENCH_REPLICAS (default
 * DEFAULT_CONFIGURATIONS): comma-separated `a/e/s` replica counts of
 * admission, execution and state behind nginx, or `direct` for one of each
 * called directly.
 */
export function replicaConfigurations(spec = process.env.BENCH_REPLICAS ?? DEFAULT_CONFIGURATIONS) {
  return spec.split(',').map((entry) => {
    const text = entry.trim();
    if (text === 'direct') return { admission: 1, execution: 1, state: 1, front: false };
    const match = /^(\d+)\/(\d+)\/(\d+)$/.exec(text);
    const counts = match?.slice(1).map(Number);
    if (!counts || counts.some((count) => count < 1 || count > 16)) {
      throw new Error(`BENCH_REPLICAS takes 'direct' or admission/execution/state replica counts (1 to 16 each), comma-separated; got ${JSON.stringify(text)}`);
    }
    return { ...Object.fromEntries(SERVICES.map((name, index) => [name, counts[index]])), front: true };
  });
}

const countsOf = (config) => SERVICES.map((name) => config[name]).join('/');
const instanceOf = (config) => `replicas-${config.front ? 'nginx' : 'direct'}-${SERVICES.map((name) => config[name]).join('-')}`;
const labelOf = (config) => `${countsOf(config)} ${config.front ? 'behind nginx' : 'direct, no nginx'}`;
/** A case's label names its group too, so that history.csv (scenario, case) tells the two apart. */
const caseLabel = (group, config) => `${group.short}, ${labelOf(config)}`;

/** The two cases, each a function of the configuration. */
const groupsFor = (sizes) => [
  {
    name: `replicas (admission/execution/state): SubmitJob, ${HANDLERS} callers`,
    short: 'SubmitJob',
    key: 'replicas-submit-16',
    caseFor(config) {
      return submitCase(sizes, 'docket', caseLabel(this, config), undefined, HANDLERS, sizes.jobs, 0, { instance: instanceOf(config) });
    },
  },
  {
    name: `replicas (admission/execution/state): claim + complete, one job per claim, ${HANDLERS} handlers, unary`,
    short: 'claim + complete',
    key: 'replicas-claim-one',
    caseFor(config) {
      return consumeCase(sizes, 'docket', caseLabel(this, config), ONE_PER_CLAIM, sizes.jobs, { instance: instanceOf(config) });
    },
  },
];

/** The front's processes, in the order launchDocket lists them. */
const FRONT_LABELS = ['nginx', 'port switch'];

/** Each process of a deployment by label (`admission 1`, `admission 2`, ..., `nginx`, `port switch`), and this one, `bench`. */
function processLabels(pids) {
  const deployment = Object.entries(pids).flatMap(([name, list]) => list.map((pid, index) => [name === 'front' ? FRONT_LABELS[index] : `${name} ${index + 1}`, pid]));
  return Object.fromEntries([...deployment, ['bench', process.pid]]);
}

/**
 * The processes outside the measurement that used the most CPU in it
 * (not the deployment, the load, PostgreSQL or this process): what
 * disturbed it, if anything.
 */
function busiestOthers(cpu, processes, count = 3) {
  const known = new Set([...Object.values(processes), ...cpu.generatorPids]);
  return [...cpu.after]
    .filter(([pid, { command }]) => !known.has(pid) && !isPostgres(command))
    .map(([pid, { ms, command }]) => ({ pid, ms: ms - (cpu.before.get(pid)?.ms ?? 0), command: command.slice(0, 120) }))
    .filter(({ ms }) => ms > 0)
    .sort((a, b) => b.ms - a.ms)
    .slice(0, count);
}

const integer = (value) => (value === undefined || value === null || !Number.isFinite(value) ? '-' : Math.round(value).toLocaleString('en-US'));
const cores = (usPerJob, jobsPerSecond) => (usPerJob === undefined ? '-' : ((usPerJob * jobsPerSecond) / 1e6).toFixed(2));

/** A service's CPU per job: the sum over its replicas, and each replica's when there are several. */
function serviceCell(row, name) {
  const total = row.cpuUsPerJob?.[name];
  const count = row.configuration[name];
  if (count === 1) return integer(total);
  // A replica that used no CPU at all has no entry.
  const each = Array.from({ length: count }, (_, index) => integer(row.cpuUsPerJobByProcess?.[`${name} ${index + 1}`] ?? 0));
  return `${integer(total)} (${each.join(' / ')})`;
}

/** The scenario's own table: one line per case, CPU per job per process and what it comes to in cores. */
function curveLines(rows, groups) {
  return rows.map((row) => {
    const group = groups.find((candidate) => candidate.key === row.groupKey);
    const reference = rows.find((other) => other.groupKey === row.groupKey && other.configuration.front && countsOf(other.configuration) === '1/1/1');
    const cpu = row.cpuUsPerJob ?? {};
    const all = Object.values(cpu).reduce((sum, value) => sum + value, 0);
    return {
      case: group?.short ?? row.group,
      'admission/execution/state': countsOf(row.configuration),
      front: row.configuration.front ? 'nginx + switch' : 'none',
      'jobs/s': integer(row.jobsPerSecond),
      'x 1/1/1 front': reference ? `${(row.jobsPerSecond / reference.jobsPerSecond).toFixed(2)}x` : '-',
      'PostgreSQL us/job': integer(cpu.postgres),
      'load us/job': integer(cpu.load),
      'front us/job (nginx / switch)': row.configuration.front
        ? `${integer(cpu.front)} (${FRONT_LABELS.map((label) => integer(row.cpuUsPerJobByProcess?.[label] ?? 0)).join(' / ')})`
        : '-',
      ...Object.fromEntries(SERVICES.map((name) => [`${name} us/job (each)`, serviceCell(row, name)])),
      'all us/job': integer(all),
      'PostgreSQL cores': cores(cpu.postgres, row.jobsPerSecond),
      'front cores': cores(cpu.front, row.jobsPerSecond),
      'all cores (all x jobs/s)': cores(all, row.jobsPerSecond),
      'machine cores busy (every process)': cores(row.cpuUsPerJobByProcess?.machine, row.jobsPerSecond),
    };
  });
}

/**
 * Runs the scenario: for each repetition, each configuration in turn
 * (launched, its two cases measured, stopped). Resolves with the summary
 * rows (for the results and CPU tables and the history) and the curve's
 * table; throws, with what it measured as `outcome`, if a measurement failed.
 */
export async function benchReplicas({ server, root, quick, reps, jobs }) {
  const sizes = sizesFor({ quick, jobs });
  const configurations = replicaConfigurations();
  const groups = groupsFor(sizes);
  const runId = randomBytes(3).toString('hex');
  const began = performance.now();
  const prefix = () => `  ${((performance.now() - began) / 1000).toFixed(0).padStart(4)} s`;
  const databases = {};
  for (const config of configurations) databases[instanceOf(config)] = await server.createDatabase(databaseName(instanceOf(config)));
  console.log(`  replicas: ${configurations.map(labelOf).join('; ')}; ${reps} rep(s), ${sizes.jobs} jobs per measurement`);

  const measurements = [];
  const complaints = [];
  let sequence = 0;
  for (let rep = 1; rep <= reps; rep += 1) {
    for (const config of inRepetitionOrder(configurations, rep)) {
      const instance = instanceOf(config);
      const identityOf = (group) => ({ scenario: REPLICAS_SCENARIO, group: group.name, groupKey: group.key, system: 'docket', label: caseLabel(group, config), callers: HANDLERS, jobs: sizes.jobs, rep, configuration: config });
      let deployment;
      try {
        deployment = await launchDocket({
          root,
          databaseUrl: databases[instance],
          replicas: Object.fromEntries(SERVICES.map((name) => [name, config[name]])),
          ...(config.front ? { front: 'nginx' } : {}),
        });
      } catch (error) {
        console.log(`${prefix()}  rep ${rep}  ${labelOf(config)}: FAILED to start: ${String(error.message).split('\n').slice(0, 4).join(' | ')}`);
        for (const group of groups) measurements.push({ ...identityOf(group), error: `the deployment did not start: ${error.message}` });
        continue;
      }
      try {
        const connection = await docketConnection(deployment);
        const processes = processLabels(deployment.pids);
        for (const group of groups) {
          sequence += 1;
          const context = {
            connect: (name) => {
              if (name !== instance) throw new Error(`the replicas scenario has no ${name} running now`);
              return connection;
            },
            queue: () => `${group.key}-r${rep}-${sequence}-${runId}`,
            keyPrefix: `${runId}-${group.key}-r${rep}-${sequence}`,
          };
          const testCase = group.caseFor(config);
          measurements.push(
            await measureCase({
              testCase,
              context,
              identity: identityOf(group),
              name: `rep ${rep}  ${SYSTEM_NAMES.docket}: ${testCase.label}`,
              servicePids: deployment.pids,
              detail: (cpu, figures) => ({ cpuUsPerJobByProcess: cpuPerJobOfProcesses(cpu, processes, figures.count), busiestOthers: cpu && busiestOthers(cpu, processes) }),
              prefix,
            }),
          );
        }
      } finally {
        complaints.push(...deployment.complaints().map((complaint) => ({ configuration: labelOf(config), ...complaint })));
        await deployment.stop();
      }
    }
  }

  const measured = measurements.filter((measurement) => !measurement.error);
  const rows = summarize(measured).map((row) => {
    const repsOfRow = measured.filter((measurement) => caseKey(measurement) === caseKey(row));
    return { ...row, configuration: repsOfRow[0].configuration, cpuUsPerJobByProcess: medianCpuPerJob(repsOfRow, { field: 'cpuUsPerJobByProcess', roles: null }) };
  });
  const outcome = {
    rows,
    tables: {
      replicas: {
        title: `replicas: jobs/s and CPU per job by process (medians of ${reps} rep(s), ${sizes.jobs} jobs each; "each" is every replica's share in order; cores = us/job x jobs/s)`,
        rows: curveLines(rows, groups),
        serviceComplaints: { count: complaints.length, first: complaints.slice(0, 8) },
        measurements,
      },
    },
  };
  const failures = measurements.filter((measurement) => measurement.error);
  if (failures.length > 0) throw Object.assign(new Error(failures.map((failure) => `${failure.label}, ${failure.group}: ${failure.error}`).join('\n')), { outcome });
  return outcome;
}

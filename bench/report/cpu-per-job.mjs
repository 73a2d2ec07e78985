// CPU per job, by process, for every measurement: what PostgreSQL, the load
// generator (the client, or the peer's own worker) and each Docket service
// spent on the timed part, divided by the jobs it counted. Read from /proc
// (bench/process-cpu.mjs) as the timed part starts and once every result
// is in; processes of other deployments (a baseline, the backlog ones) are
// left out, Postgres counts as a whole (every backend, the WAL writer, the
// checkpointer).
import { median } from '../stats.mjs';
import { cpuByRole } from '../process-cpu.mjs';

/**
 * The process roles reported, in column order. `front` is nginx and its port switch before
 * a deployment's replicas (the replicas scenario), `one process` the four
 * services of `--one-process` together; each a column of the CPU table
 * only when a row has it.
 */
export const CPU_ROLES = ['postgres', 'load', 'front', 'admission', 'execution', 'state', 'events', 'one process'];
const OPTIONAL_ROLES = ['front', 'one process'];

/** Whether a process's command line is PostgreSQL's (the postmaster or a backend). */
export const isPostgres = (command) => /^postgres[: ]|\/postgres /.test(command);

/**
 * CPU ms used between `cpu.before` and `cpu.after` by role: `roleByPid`
 * names some processes, the generators are `load`, every PostgreSQL
 * process `postgres`, any other process `other`.
 */
function cpuMsByRole(cpu, roleByPid) {
  const roles = new Map(roleByPid);
  for (const pid of cpu.generatorPids) roles.set(pid, 'load');
  return cpuByRole(cpu.before, cpu.after, (pid, command) => roles.get(pid) ?? (isPostgres(command) ? 'postgres' : undefined));
}

const perJob = (used, jobs) => Object.fromEntries(Object.entries(used).map(([role, ms]) => [role, (ms * 1000) / jobs]));

/**
 * Microseconds of CPU per job by role, from `cpu` ({before, after,
 * generatorPids} of runGenerators' onTimed) and `servicePids` (a Docket
 * deployment's pids by service name, and `front`'s when it has one;
 * `{}` for the other systems).
 */
export function cpuPerJob(cpu, servicePids, jobs) {
  if (!cpu || !(jobs > 0)) return undefined;
  const roleByPid = new Map(Object.entries(servicePids).flatMap(([name, pids]) => pids.map((pid) => [pid, name])));
  const used = cpuMsByRole(cpu, roleByPid);
  return Object.fromEntries(CPU_ROLES.filter((role) => used[role] !== undefined).map((role) => [role, (used[role] * 1000) / jobs]));
}

/**
 * Microseconds of CPU per job of each process `processes` names ({label:
 * pid}: one replica each), of `postgres` and `load` as in cpuPerJob, of
 * every `other` process, and of the whole `machine` (every process's CPU
 * between the two snapshots: what the jobs/s cost the machine, whoever
 * spent it).
 */
export function cpuPerJobOfProcesses(cpu, processes, jobs) {
  if (!cpu || !(jobs > 0)) return undefined;
  const used = cpuMsByRole(cpu, new Map(Object.entries(processes).map(([label, pid]) => [pid, label])));
  const machine = Object.values(used).reduce((sum, ms) => sum + ms, 0);
  return perJob({ ...used, machine }, jobs);
}

/**
 * The median over repetitions of each role's CPU per job (`field` of each
 * repetition, by default `cpuUsPerJob`; `roles`, by default CPU_ROLES, or
 * every key any repetition has when null).
 */
export function medianCpuPerJob(reps, { field = 'cpuUsPerJob', roles = CPU_ROLES } = {}) {
  const measured = reps.map((rep) => rep[field]).filter(Boolean);
  if (measured.length === 0) return undefined;
  const present = roles ?? [...new Set(measured.flatMap((cpu) => Object.keys(cpu)))];
  return Object.fromEntries(
    present.filter((role) => measured.some((cpu) => cpu[role] !== undefined)).map((role) => [role, median(measured.map((cpu) => cpu[role] ?? 0))]),
  );
}

/** The Docket services' share of a row's CPU per job (undefined for a system without services). */
export function serviceCpu(cpu) {
  const services = ['admission', 'execution', 'state', 'events'].filter((role) => cpu?.[role] !== undefined);
  return services.length === 0 ? undefined : services.reduce((sum, role) => sum + cpu[role], 0);
}

const micros = (value) => (value === undefined ? '-' : Math.round(value).toLocaleString('en-US'));

/** One row per case: its CPU per job by process, and the sum. */
export function cpuTable(rows) {
  const roles = CPU_ROLES.filter((role) => !OPTIONAL_ROLES.includes(role) || rows.some((row) => row.cpuUsPerJob?.[role] !== undefined));
  return {
    title: 'CPU per job, microseconds, by process (medians over repetitions; "load" is the generator: the client, or the peer\'s own worker)',
    headers: ['scenario', 'system', 'case', ...roles, 'all'],
    numeric: roles.map((_, index) => index + 3).concat(roles.length + 3),
    rows: rows.map((row) => {
      const cpu = row.cpuUsPerJob ?? {};
      const all = Object.values(cpu).reduce((sum, value) => sum + value, 0);
      return [row.group, row.systemName, row.label, ...roles.map((role) => micros(cpu[role])), row.cpuUsPerJob ? micros(all) : '-'];
    }),
  };
}

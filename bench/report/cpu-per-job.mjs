// CPU per job, by process, for every measurement: what PostgreSQL, the load
// generator (the client, or the peer's own worker) and each Docket service
// spent on the timed part, divided by the jobs it counted. Read from /proc
// (bench/process-cpu.mjs) as the timed part starts and once every result
// is in; processes of other deployments (a baseline, the backlog ones) are
// left out, Postgres counts as a whole (every backend, the WAL writer, the
// checkpointer).
import { median } from '../stats.mjs';
import { cpuByRole } from '../process-cpu.mjs';

/** The process roles reported, in column order. */
export const CPU_ROLES = ['postgres', 'load', 'admission', 'execution', 'state', 'events'];

/**
 * Microseconds of CPU per job by role, from `cpu` ({before, after,
 * generatorPids} of runGenerators' onTimed) and `servicePids` (a Docket
 * deployment's pids by service name; `{}` for the other systems).
 */
export function cpuPerJob(cpu, servicePids, jobs) {
  if (!cpu || !(jobs > 0)) return undefined;
  const roleByPid = new Map();
  for (const pid of cpu.generatorPids) roleByPid.set(pid, 'load');
  for (const [name, pids] of Object.entries(servicePids)) for (const pid of pids) roleByPid.set(pid, name);
  const used = cpuByRole(cpu.before, cpu.after, (pid, command) => roleByPid.get(pid) ?? (/^postgres[: ]|\/postgres /.test(command) ? 'postgres' : undefined));
  return Object.fromEntries(CPU_ROLES.filter((role) => used[role] !== undefined).map((role) => [role, (used[role] * 1000) / jobs]));
}

/** The median over repetitions of each role's CPU per job. */
export function medianCpuPerJob(reps) {
  const measured = reps.map((rep) => rep.cpuUsPerJob).filter(Boolean);
  if (measured.length === 0) return undefined;
  return Object.fromEntries(
    CPU_ROLES.filter((role) => measured.some((cpu) => cpu[role] !== undefined)).map((role) => [role, median(measured.map((cpu) => cpu[role] ?? 0))]),
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
  return {
    title: 'CPU per job, microseconds, by process (medians over repetitions; "load" is the generator: the client, or the peer\'s own worker)',
    headers: ['scenario', 'system', 'case', ...CPU_ROLES, 'all'],
    numeric: CPU_ROLES.map((_, index) => index + 3).concat(CPU_ROLES.length + 3),
    rows: rows.map((row) => {
      const cpu = row.cpuUsPerJob ?? {};
      const all = Object.values(cpu).reduce((sum, value) => sum + value, 0);
      return [row.group, row.systemName, row.label, ...CPU_ROLES.map((role) => micros(cpu[role])), row.cpuUsPerJob ? micros(all) : '-'];
    }),
  };
}

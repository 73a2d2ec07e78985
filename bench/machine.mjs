// What the results were measured on: the machine, and how busy it was at the
// start and end of the run (these machines are shared; a high load average
// makes every figure of the run suspect, ratios less so).
import { arch, cpus, loadavg, platform, release, totalmem } from 'node:os';

/** A snapshot of the load average (1, 5, 15 minutes). */
export const loadAverage = () => loadavg().map((value) => Number(value.toFixed(2)));

/** The machine, for the results file. */
export function machineInfo() {
  const processors = cpus();
  return {
    cpus: processors.length,
    cpuModel: processors[0]?.model,
    memoryGiB: Number((totalmem() / 2 ** 30).toFixed(1)),
    platform: `${platform()} ${release()} ${arch()}`,
    node: process.version,
  };
}

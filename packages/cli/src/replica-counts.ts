import { SERVICE_NAMES, type ServiceName } from './service-names.js';

/** The most replicas of one service `docket dev --replicas` starts on one machine. */
export const MAX_DEV_REPLICAS = 16;

/** How many processes of each service run. */
export type ReplicaCounts = Readonly<Record<ServiceName, number>>;

/** One process of each service: `docket dev` without `--replicas`. */
export const SINGLE_REPLICAS: ReplicaCounts = { state: 1, admission: 1, execution: 1, events: 1 };

/**
 * Parses `--replicas`' value, `<service>=<count>` pairs separated by
 * commas (`admission=3,execution=3,events=2,state=2`); a service it does
 * not name runs once. Throws an Error naming the first bad pair: an
 * unknown service, a repeated one, or a count outside 1..{@link MAX_DEV_REPLICAS}.
 */
export function parseReplicaCounts(spec: string): ReplicaCounts {
  const counts: Record<ServiceName, number> = { ...SINGLE_REPLICAS };
  const seen = new Set<string>();
  for (const pair of spec.split(',')) {
    const match = /^\s*([a-z]+)\s*=\s*(\d+)\s*$/.exec(pair);
    const name = SERVICE_NAMES.find((candidate) => candidate === match?.[1]);
    if (!match || !name) {
      throw new Error(`--replicas takes <service>=<count> pairs separated by commas (services: ${SERVICE_NAMES.join(', ')}), got ${JSON.stringify(pair)}`);
    }
    if (seen.has(name)) throw new Error(`--replicas names ${name} twice`);
    seen.add(name);
    const count = Number(match[2]);
    if (count < 1 || count > MAX_DEV_REPLICAS) throw new Error(`--replicas: ${name} must run 1 to ${MAX_DEV_REPLICAS} replicas, got ${count}`);
    counts[name] = count;
  }
  return counts;
}

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  FRONT_SERVICE_NAMES,
  SERVICE_NAMES,
  layOutFront,
  locateFrontPrograms,
  serviceEnvironment,
  startFront,
  type Front,
  type FrontLayout,
  type ServiceName,
} from '@docket/cli';
import { newClusterCredentials, replicaCount, settleAll, type ClusterShape, type DocketServices } from './docket-services.js';
import { startService, stopAll as stopServiceProcesses, type ServiceProcess, type StartServiceOptions } from './service-process.js';

export { REPO_ROOT, startService, type ServiceProcess, type StartServiceOptions } from './service-process.js';
export type { DocketServices, RunningService } from './docket-services.js';
export type { ServiceName } from '@docket/cli';

/** Options for {@link startCluster}. */
export interface ClusterOptions extends ClusterShape {
  /** Script per service instead of `services/<name>/dist/main.js` (test fixtures). */
  readonly entryFor?: (name: ServiceName) => string;
  /** Passed to every {@link startService}. */
  readonly readyTimeoutMs?: number;
  /**
   * The URL the front services are given for a state replica's `url`
   * (default that URL): a test routes them through a proxy it controls.
   * With a `front`, they are given nginx's HTTP/2 state address, through this.
   */
  readonly stateUrlFor?: (url: string) => Promise<string>;
  /**
   * `'nginx'`: the replicas run behind the nginx front of `docket dev
   * --replicas` (the same layout and configuration, from `@docket/cli`):
   * each replica on a free port, the front's port switch on one port per
   * service (HTTP/2 and HTTP/1.1), the front services reaching state
   * through nginx. `cluster.<service>.url` is then
   * the front's address; the named service's process (its logs, stop,
   * kill and restart) stays replica 0's. Default: no front, replica `i` of
   * a front service talks to state replica `i mod <state replicas>`.
   */
  readonly front?: 'nginx';
}

/**
 * The four services as processes sharing one database and one secret,
 * as many replicas of each as asked; `stop` sends SIGTERM, then SIGKILL
 * after the grace period.
 */
export type DocketCluster = DocketServices<ServiceProcess> & {
  /** The nginx front, when the cluster was started with `front: 'nginx'`. */
  readonly front: Front | undefined;
};

/** Fronts started here and not yet stopped, with their directories. */
const runningFronts = new Map<Front, string>();

async function stopFront(front: Front): Promise<void> {
  const dir = runningFronts.get(front);
  runningFronts.delete(front);
  await front.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
}

/**
 * Stops every service process this test file started (SIGTERM, SIGKILL
 * after the grace period), then every nginx front. Meant for
 * `afterAll(stopAll)`.
 */
export async function stopAll(): Promise<void> {
  await stopServiceProcesses();
  await Promise.all([...runningFronts.keys()].map(stopFront));
}

/**
 * Starts state (every replica), then admission, execution and events,
 * each on its own port on 127.0.0.1, wired the way `docket dev` wires them
 * (same environment builder), behind the nginx front if asked. If any
 * service fails to start, the ones already started are stopped and the
 * error (with that service's output) is thrown.
 */
export async function startCluster(options: ClusterOptions): Promise<DocketCluster> {
  const credentials = await newClusterCredentials(options.databaseUrl);
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await launchCluster(options, credentials);
    } catch (error) {
      if (attempt >= PORT_RACE_ATTEMPTS || !lostPortRace(error)) throw error;
    }
  }
}

/**
 * How many times a cluster is laid out afresh when a port it chose was
 * taken before its process bound it. The front's ports are chosen free and
 * bound a moment later, and test files running in parallel bind ports of
 * their own in that moment.
 */
const PORT_RACE_ATTEMPTS = 3;

/** Whether a start failed because a chosen port was taken meanwhile: EADDRINUSE in a service's or nginx's output, or the front finding one of its ports held. */
function lostPortRace(error: unknown): boolean {
  return error instanceof Error && /EADDRINUSE|address already in use|is in use: the front cannot listen/i.test(error.message);
}

/** One try of {@link startCluster}: everything it started is stopped again if any part fails. */
async function launchCluster(options: ClusterOptions, credentials: Awaited<ReturnType<typeof newClusterCredentials>>): Promise<DocketCluster> {
  const replicas: Record<ServiceName, ServiceProcess[]> = { state: [], admission: [], execution: [], events: [] };
  const counts = Object.fromEntries(SERVICE_NAMES.map((name) => [name, replicaCount(options.replicas, name)])) as Record<ServiceName, number>;

  let layout: FrontLayout | undefined;
  let front: Front | undefined;
  if (options.front === 'nginx') {
    layout = await layOutFront({ host: '127.0.0.1', counts, ports: { state: 0, admission: 0, execution: 0, events: 0 } });
    const dir = await mkdtemp(join(tmpdir(), 'docket-front-'));
    try {
      front = await startFront({ programs: await locateFrontPrograms(process.env), dir, accessLog: join(dir, 'access.log'), services: layout.services });
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    runningFronts.set(front, dir);
  }

  const start = async (name: ServiceName, index: number, stateUrl?: string): Promise<void> => {
    const serviceOptions: StartServiceOptions = {
      ...(options.entryFor ? { entry: options.entryFor(name) } : {}),
      ...(options.readyTimeoutMs === undefined ? {} : { readyTimeoutMs: options.readyTimeoutMs }),
      onRestart: (previous, next) => {
        const slot = replicas[name].indexOf(previous);
        if (slot >= 0) replicas[name][slot] = next;
      },
    };
    const listen = layout?.replicas[name][index] ?? '127.0.0.1:0';
    const env = {
      ...serviceEnvironment(name, credentials.settings, listen, stateUrl),
      ...options.env?.[name],
    };
    replicas[name][index] = await startService(name, env, serviceOptions);
  };

  const stop = async (): Promise<void> => {
    await Promise.all(FRONT_SERVICE_NAMES.flatMap((name) => replicas[name].map((service) => service.stop())));
    await Promise.all(replicas.state.map((service) => service.stop()));
    if (front !== undefined) await stopFront(front);
  };

  try {
    await settleAll(Array.from({ length: counts.state }, (_, index) => start('state', index)));
    const stateUrls =
      front === undefined
        ? await Promise.all(replicas.state.map((service) => options.stateUrlFor?.(service.url) ?? service.url))
        : [await (options.stateUrlFor?.(front.http2Urls.state ?? '') ?? front.http2Urls.state ?? '')];
    await settleAll(
      FRONT_SERVICE_NAMES.flatMap((name) =>
        Array.from({ length: counts[name] }, (_, index) => start(name, index, stateUrls[index % stateUrls.length])),
      ),
    );
  } catch (error) {
    await stop();
    throw error;
  }

  const named = (name: ServiceName): ServiceProcess => {
    const service = replicas[name][0];
    if (!service) throw new Error(`no ${name} replica`);
    const frontUrl = front?.urls[name];
    return frontUrl === undefined ? service : { ...service, url: frontUrl };
  };
  return {
    get state() {
      return named('state');
    },
    get admission() {
      return named('admission');
    },
    get execution() {
      return named('execution');
    },
    get events() {
      return named('events');
    },
    replicas,
    front,
    ...credentials.shared,
    stop,
  };
}

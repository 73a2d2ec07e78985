import {
  FRONT_SERVICE_NAMES,
  serviceEnvironment,
  type ServiceName,
} from '@docket/cli';
import { newClusterCredentials, replicaCount, settleAll, type ClusterShape, type DocketServices } from './docket-services.js';
import { startService, type ServiceProcess, type StartServiceOptions } from './service-process.js';

export { REPO_ROOT, startService, stopAll, type ServiceProcess, type StartServiceOptions } from './service-process.js';
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
   */
  readonly stateUrlFor?: (url: string) => Promise<string>;
}

/**
 * The four services as processes sharing one database and one secret,
 * as many replicas of each as asked; `stop` sends SIGTERM, then SIGKILL
 * after the grace period.
 */
export type DocketCluster = DocketServices<ServiceProcess>;

/**
 * Starts state (every replica), then admission, execution and events,
 * each on its own port on 127.0.0.1, wired the way `docket dev` wires them
 * (same environment builder). If any service fails to start, the ones
 * already started are stopped and the error (with that service's output)
 * is thrown.
 */
export async function startCluster(options: ClusterOptions): Promise<DocketCluster> {
  const credentials = await newClusterCredentials(options.databaseUrl);
  const replicas: Record<ServiceName, ServiceProcess[]> = { state: [], admission: [], execution: [], events: [] };

  const start = async (name: ServiceName, index: number, stateUrl?: string): Promise<void> => {
    const serviceOptions: StartServiceOptions = {
      ...(options.entryFor ? { entry: options.entryFor(name) } : {}),
      ...(options.readyTimeoutMs === undefined ? {} : { readyTimeoutMs: options.readyTimeoutMs }),
      onRestart: (previous, next) => {
        const slot = replicas[name].indexOf(previous);
        if (slot >= 0) replicas[name][slot] = next;
      },
    };
    const env = {
      ...serviceEnvironment(name, credentials.settings, '127.0.0.1:0', stateUrl),
      ...options.env?.[name],
    };
    replicas[name][index] = await startService(name, env, serviceOptions);
  };

  const stop = async (): Promise<void> => {
    await Promise.all(FRONT_SERVICE_NAMES.flatMap((name) => replicas[name].map((service) => service.stop())));
    await Promise.all(replicas.state.map((service) => service.stop()));
  };

  try {
    await settleAll(Array.from({ length: replicaCount(options.replicas, 'state') }, (_, index) => start('state', index)));
    const stateUrls = await Promise.all(replicas.state.map((service) => options.stateUrlFor?.(service.url) ?? service.url));
    await settleAll(
      FRONT_SERVICE_NAMES.flatMap((name) =>
        Array.from({ length: replicaCount(options.replicas, name) }, (_, index) => start(name, index, stateUrls[index % stateUrls.length])),
      ),
    );
  } catch (error) {
    await stop();
    throw error;
  }

  const first = (name: ServiceName): ServiceProcess => {
    const service = replicas[name][0];
    if (!service) throw new Error(`no ${name} replica`);
    return service;
  };
  return {
    get state() {
      return first('state');
    },
    get admission() {
      return first('admission');
    },
    get execution() {
      return first('execution');
    },
    get events() {
      return first('events');
    },
    replicas,
    ...credentials.shared,
    stop,
  };
}

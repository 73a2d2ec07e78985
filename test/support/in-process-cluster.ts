import { FRONT_SERVICE_NAMES, serviceEnvironment, type ServiceName } from '@docket/cli';
import { createLogger, readLogLevel, type Environment, type Logger, type StartedService } from '@docket/service-kit';
import { startAdmissionService } from '@docket/admission-service/start';
import { startEventsService } from '@docket/events-service/start';
import { startExecutionService } from '@docket/execution-service/start';
import { startStateService } from '@docket/state-service/start';
import { newClusterCredentials, replicaCount, settleAll, type ClusterShape, type DocketServices, type RunningService } from './docket-services.js';

/** Each service's start function, the one its `main.ts` runs as a process. */
const STARTS: Record<ServiceName, (env: Environment, logger: Logger) => Promise<StartedService>> = {
  state: startStateService,
  admission: startAdmissionService,
  execution: startExecutionService,
  events: startEventsService,
};

/** Clusters started by this module and not yet stopped. */
const running = new Set<DocketServices>();

/** Options for {@link startInProcessCluster}: what every test cluster takes. */
export type InProcessClusterOptions = ClusterShape;

/** A service started in this process: its server and how it stops. */
export interface InProcessService extends RunningService {
  stop(): Promise<void>;
}

/**
 * Starts the four services in the test's own process: each from its own
 * start function (the one `main.ts` runs), with the environment `docket dev`
 * gives it, on its own real loopback HTTP/2 port, against real Postgres;
 * every call between them and from the test crosses real sockets, exactly
 * as between processes. What it leaves out is the process: no spawn, no
 * signals, no exit codes, no crash. Tests about those use `startCluster`.
 *
 * Each service's log lines are kept in its `logs`, not printed. `stop()`
 * drains the front services, then state, as SIGTERM would;
 * {@link stopInProcessClusters} (`afterAll`) stops every one not stopped.
 */
export async function startInProcessCluster(options: InProcessClusterOptions): Promise<DocketServices<InProcessService>> {
  const credentials = await newClusterCredentials(options.databaseUrl);
  const replicas: Record<ServiceName, InProcessService[]> = { state: [], admission: [], execution: [], events: [] };
  const start = async (name: ServiceName, index: number, stateUrl?: string): Promise<void> => {
    const env = { ...serviceEnvironment(name, credentials.settings, '127.0.0.1:0', stateUrl), ...options.env?.[name] };
    const logs: string[] = [];
    const logger = createLogger(name, (line) => logs.push(line), readLogLevel(env));
    const service = await STARTS[name](env, logger);
    let stopping: Promise<void> | undefined;
    const stop = (): Promise<void> =>
      (stopping ??= (async () => {
        await service.server.shutdown(service.graceMs);
        await service.onStopped?.();
      })());
    replicas[name][index] = { name, url: service.server.url, logs, stop };
  };
  const stop = async (): Promise<void> => {
    await Promise.all(FRONT_SERVICE_NAMES.flatMap((name) => replicas[name].map((service) => service.stop())));
    await Promise.all(replicas.state.map((service) => service.stop()));
  };

  try {
    await settleAll(Array.from({ length: replicaCount(options.replicas, 'state') }, (_, index) => start('state', index)));
    await settleAll(
      FRONT_SERVICE_NAMES.flatMap((name) =>
        Array.from({ length: replicaCount(options.replicas, name) }, (_, index) => start(name, index, replicas.state[index % replicas.state.length]!.url)),
      ),
    );
  } catch (error) {
    await stop();
    throw error;
  }
  const cluster: DocketServices<InProcessService> = {
    state: replicas.state[0]!,
    admission: replicas.admission[0]!,
    execution: replicas.execution[0]!,
    events: replicas.events[0]!,
    replicas,
    ...credentials.shared,
    stop: async () => {
      running.delete(cluster);
      await stop();
    },
  };
  running.add(cluster);
  return cluster;
}

/** Stops every cluster {@link startInProcessCluster} started in this file and not stopped; meant for `afterAll`. */
export async function stopInProcessClusters(): Promise<void> {
  await Promise.all([...running].map((cluster) => cluster.stop()));
}

import { randomBytes } from 'node:crypto';
import { mintToken, SERVICE_AUDIENCE, type Role } from '@docket/auth';
import {
  FRONT_SERVICE_NAMES,
  serviceEnvironment,
  type DocketServiceSettings,
  type ServiceName,
} from '@docket/cli';
import { startService, type ServiceProcess, type StartServiceOptions } from './service-process.js';

export { REPO_ROOT, startService, stopAll, type ServiceProcess, type StartServiceOptions } from './service-process.js';
export type { ServiceName } from '@docket/cli';

/** How long the tokens a test cluster mints live: longer than any test run. */
const TEST_TOKEN_TTL_SECONDS = 86_400;

/** Options for {@link startCluster}. */
export interface ClusterOptions {
  /** The database the state service uses (see `createTestDatabase`). */
  readonly databaseUrl: string;
  /**
   * How many processes of each service; default 1 each. Replica `i` of a
   * front service talks to state replica `i mod <state replicas>`.
   */
  readonly replicas?: Partial<Record<ServiceName, number>>;
  /** Extra environment per service, applied over the generated one. */
  readonly env?: Partial<Record<ServiceName, Readonly<Record<string, string>>>>;
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

/** A running set of the four services sharing one database and one secret. */
export interface DocketCluster {
  /** The first replica of each service (after a restart, the new process). */
  readonly state: ServiceProcess;
  readonly admission: ServiceProcess;
  readonly execution: ServiceProcess;
  readonly events: ServiceProcess;
  /** Every replica, by service, kept current across restarts. */
  readonly replicas: Readonly<Record<ServiceName, readonly ServiceProcess[]>>;
  /** The HS256 secret the public services verify tokens with (random per cluster). */
  readonly secret: string;
  readonly cursorSecret: string;
  /** The state service's own secret (random per cluster), which public tokens are never signed with. */
  readonly serviceAuthSecret: string;
  /** A `service`-role token signed with it, for tests that call the state service directly. */
  readonly serviceToken: string;
  readonly databaseUrl: string;
  /** A bearer token for `subject` with `role` (and, for a worker, the queues it may serve), valid on this cluster for a day. */
  tokenFor(subject: string, role: Role, queues?: readonly string[]): Promise<string>;
  /** Stops the front services, then state (SIGTERM, SIGKILL after the grace period). */
  stop(): Promise<void>;
}

/**
 * Starts state (every replica), then admission, execution and events,
 * each on its own port on 127.0.0.1, wired the way `docket dev` wires them
 * (same environment builder). If any service fails to start, the ones
 * already started are stopped and the error (with that service's output)
 * is thrown.
 */
export async function startCluster(options: ClusterOptions): Promise<DocketCluster> {
  const secret = randomBytes(32).toString('base64url');
  const serviceAuthSecret = randomBytes(32).toString('base64url');
  const settings: DocketServiceSettings = {
    authSecret: secret,
    cursorSecret: randomBytes(32).toString('base64url'),
    databaseUrl: options.databaseUrl,
    serviceAuthSecret,
  };
  const serviceToken = await mintToken({
    secret: serviceAuthSecret,
    subject: 'docket-test-cluster',
    role: 'service',
    ttlSeconds: TEST_TOKEN_TTL_SECONDS,
    audience: SERVICE_AUDIENCE,
  });
  const replicas: Record<ServiceName, ServiceProcess[]> = { state: [], admission: [], execution: [], events: [] };
  const countOf = (name: ServiceName): number => {
    const count = options.replicas?.[name] ?? 1;
    if (!Number.isInteger(count) || count < 1) throw new Error(`replicas.${name} must be a positive integer`);
    return count;
  };

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
      ...serviceEnvironment(name, settings, '127.0.0.1:0', stateUrl),
      ...options.env?.[name],
    };
    replicas[name][index] = await startService(name, env, serviceOptions);
  };

  const stop = async (): Promise<void> => {
    await Promise.all(FRONT_SERVICE_NAMES.flatMap((name) => replicas[name].map((service) => service.stop())));
    await Promise.all(replicas.state.map((service) => service.stop()));
  };

  try {
    await settleAll(Array.from({ length: countOf('state') }, (_, index) => start('state', index)));
    const stateUrls = await Promise.all(replicas.state.map((service) => options.stateUrlFor?.(service.url) ?? service.url));
    await settleAll(
      FRONT_SERVICE_NAMES.flatMap((name) =>
        Array.from({ length: countOf(name) }, (_, index) => start(name, index, stateUrls[index % stateUrls.length])),
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
    secret,
    cursorSecret: settings.cursorSecret,
    serviceAuthSecret,
    serviceToken,
    databaseUrl: options.databaseUrl,
    tokenFor: (subject, role, queues) =>
      mintToken({ secret, subject, role, ttlSeconds: TEST_TOKEN_TTL_SECONDS, ...(queues === undefined ? {} : { queues }) }),
    stop,
  };
}

/**
 * Like `Promise.all`, but waits for every start to settle before rejecting,
 * so no process is still starting (and untracked by `stop`) when the
 * cluster gives up.
 */
async function settleAll(starts: readonly Promise<void>[]): Promise<void> {
  const results = await Promise.allSettled(starts);
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) throw failed.reason;
}

import { randomBytes } from 'node:crypto';
import { mintToken, SERVICE_AUDIENCE, type Role } from '@docket/auth';
import type { DocketServiceSettings, ServiceName } from '@docket/cli';

/** How long the tokens a test cluster mints live: longer than any test run. */
const TEST_TOKEN_TTL_SECONDS = 86_400;

/** One running service of a test cluster, whether a process or in this process. */
export interface RunningService {
  readonly name: ServiceName;
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Every log line it wrote so far, in order. */
  readonly logs: string[];
}

/** The four services sharing one database and one set of secrets, as a test sees them. */
export interface DocketServices<Service extends RunningService = RunningService> {
  readonly state: Service;
  readonly admission: Service;
  readonly execution: Service;
  readonly events: Service;
  /** Every replica, by service (the first is the one named above), kept current across restarts. */
  readonly replicas: Readonly<Record<ServiceName, readonly Service[]>>;
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
  /** Stops the front services, then state. */
  stop(): Promise<void>;
}

/** What every test cluster is started with, in processes or in the test's process. */
export interface ClusterShape {
  /** The database the state service uses (see `createMigratedTestDatabase`). */
  readonly databaseUrl: string;
  /**
   * How many of each service; default 1 each. Replica `i` of a front
   * service talks to state replica `i mod <state replicas>`.
   */
  readonly replicas?: Partial<Record<ServiceName, number>>;
  /** Extra environment per service, applied over the generated one. */
  readonly env?: Partial<Record<ServiceName, Readonly<Record<string, string>>>>;
}

/** A cluster's secrets: the settings `serviceEnvironment` builds each service's environment from, and what a test sees of them. */
export interface ClusterCredentials {
  readonly settings: DocketServiceSettings;
  readonly shared: Pick<DocketServices, 'secret' | 'cursorSecret' | 'serviceAuthSecret' | 'serviceToken' | 'databaseUrl' | 'tokenFor'>;
}

/** Fresh random secrets for a cluster on `databaseUrl`, the way `docket dev` makes them. */
export async function newClusterCredentials(databaseUrl: string): Promise<ClusterCredentials> {
  const settings: DocketServiceSettings = {
    authSecret: randomBytes(32).toString('base64url'),
    cursorSecret: randomBytes(32).toString('base64url'),
    databaseUrl,
    serviceAuthSecret: randomBytes(32).toString('base64url'),
  };
  const serviceToken = await mintToken({
    secret: settings.serviceAuthSecret,
    subject: 'docket-test-cluster',
    role: 'service',
    ttlSeconds: TEST_TOKEN_TTL_SECONDS,
    audience: SERVICE_AUDIENCE,
  });
  return {
    settings,
    shared: {
      secret: settings.authSecret,
      cursorSecret: settings.cursorSecret,
      serviceAuthSecret: settings.serviceAuthSecret,
      serviceToken,
      databaseUrl,
      tokenFor: (subject, role, queues) =>
        mintToken({ secret: settings.authSecret, subject, role, ttlSeconds: TEST_TOKEN_TTL_SECONDS, ...(queues === undefined ? {} : { queues }) }),
    },
  };
}

/** How many replicas of `name` `replicas` asks for: a positive integer, default 1. */
export function replicaCount(replicas: Partial<Record<ServiceName, number>> | undefined, name: ServiceName): number {
  const count = replicas?.[name] ?? 1;
  if (!Number.isInteger(count) || count < 1) throw new Error(`replicas.${name} must be a positive integer`);
  return count;
}

/**
 * Like `Promise.all`, but waits for every start to settle before rejecting,
 * so no service is still starting (and untracked by `stop`) when the
 * cluster gives up.
 */
export async function settleAll(starts: readonly Promise<void>[]): Promise<void> {
  const results = await Promise.allSettled(starts);
  const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
  if (failed) throw failed.reason;
}

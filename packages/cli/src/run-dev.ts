import { access, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { mintToken } from '@docket/auth';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '@docket/embedded-postgres';
import { resolveDataDir } from './data-dir.js';
import { serveConsole, type ConsoleServer } from './console-server.js';
import { DEV_HOST, devConsolePort, devCorsOrigins, devPostgresPort, devServicePorts, inheritedServiceEnv } from './dev-config.js';
import { DevLogSink, type DevLogMode } from './dev-log-sink.js';
import { devSecretsPath, loadOrCreateDevSecrets } from './dev-secrets.js';
import { formatDevSummary } from './dev-summary.js';
import { describeExit, launchService, type LaunchedService } from './launch-service.js';
import { layOutFront, startFront, type Front, type FrontLayout } from './front.js';
import { launchOneProcess, oneProcessEnvironment } from './one-process-launch.js';
import { locateFrontPrograms } from './front-programs.js';
import type { ReplicaCounts } from './replica-counts.js';
import { serviceEnvironment, type DocketServiceSettings } from './service-environment.js';
import { FRONT_SERVICE_NAMES, SERVICE_NAMES, type ServiceName } from './service-names.js';
import { waitForServing } from './wait-for-serving.js';

/** Options for {@link runDev}. */
export interface RunDevOptions {
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly logMode: DevLogMode;
  readonly colors: boolean;
  /** The script each service runs, normally `services/<name>/dist/main.js`. */
  readonly entryFor: (name: ServiceName) => string;
  /** Aborted on Ctrl-C / SIGTERM: stop everything in order and return 0. */
  readonly stop: AbortSignal;
  /** The built web console (`packages/console/dist`), served on `DOCKET_CONSOLE_PORT`; unset serves none. */
  readonly consoleRoot?: string;
  /**
   * `--replicas`: run this many processes of each service, each on a free
   * port, behind an nginx front whose port switch listens on the services'
   * ports (docs/replicas.md). Unset: one process per service on those ports, no front.
   */
  readonly replicas?: ReplicaCounts;
  /**
   * `--one-process`: the four services in one process run from this script
   * (`services/one-process/dist/main.js`), on the services' ports, the front
   * services calling state in memory. Not with `replicas`.
   */
  readonly oneProcessEntry?: string;
}

const TOKEN_TTL_DAYS = 30;
const SHUTDOWN_GRACE_MS = 15_000;
const DATABASE_NAME = 'docket';

/**
 * `docket dev`: Postgres (embedded under `<data dir>/postgres` unless
 * `DOCKET_DATABASE_URL` is set), then state, then admission, execution and
 * events, each a child process in its own process group. Prints the summary
 * once all four report SERVING and runs until `stop` aborts (exit code 0) or
 * a child dies (everything else is stopped; exit code 1). Shutdown is
 * ordered: the three front services, then state, then Postgres.
 *
 * With `oneProcessEntry`, one child process runs all four services
 * (`services/one-process`): clients reach each on its port as before.
 *
 * With `replicas`, the front (`startFront`: nginx on `<data dir>/nginx/nginx.conf`,
 * rendered from `deploy/nginx/docket-front.conf.template`, behind HAProxy's
 * port switch) listens on the services' ports and passes each call to the
 * next replica; the front services reach state through nginx too. It
 * starts before the replicas and stops after them.
 */
export async function runDev(options: RunDevOptions): Promise<number> {
  const began = performance.now();
  const { env } = options;
  const dataDir = resolveDataDir(env, options.cwd);
  const logsDir = join(dataDir, 'logs');
  const ports = devServicePorts(env);
  if (options.oneProcessEntry !== undefined) await assertBuilt(options.oneProcessEntry);
  else for (const name of SERVICE_NAMES) await assertBuilt(options.entryFor(name));
  const counts = options.replicas;
  const programs = counts === undefined ? undefined : await locateFrontPrograms(env);
  await mkdir(logsDir, { recursive: true });
  const logs = new DevLogSink({ logsDir, mode: options.logMode, out: options.out, colors: options.colors });

  const lifetime = new Lifetime(options.stop);
  const services = new Map<ServiceName, LaunchedService[]>(SERVICE_NAMES.map((name) => [name, []]));
  let frontStarting: Promise<Front> | undefined;
  let postgresStarting: Promise<EmbeddedPostgresHandle> | undefined;
  let consoleServer: ConsoleServer | undefined;
  let failure: string | undefined;
  try {
    const stored = await loadOrCreateDevSecrets(dataDir);
    const authSecret = env['DOCKET_AUTH_SECRET'] || stored.authSecret;
    const cursorSecret = env['DOCKET_CURSOR_SECRET'] || stored.cursorSecret;
    const serviceAuthSecret = env['DOCKET_SERVICE_AUTH_SECRET'] || stored.serviceAuthSecret;

    let databaseUrl = env['DOCKET_DATABASE_URL'];
    if (!databaseUrl) {
      options.out(`Starting embedded Postgres in ${join(dataDir, 'postgres')} ...\n`);
      const port = devPostgresPort(env);
      postgresStarting = startEmbeddedPostgres({
        dataDir: join(dataDir, 'postgres'),
        persistent: true,
        ...(port === undefined ? {} : { port }),
        onLog: (line) => logs.write('postgres', line, false),
      });
      const server = await lifetime.race(postgresStarting);
      const { initialiseMs, startMs } = server.timings;
      const initialised = initialiseMs === null ? 'existing cluster' : `initialised in ${seconds(initialiseMs)}`;
      options.out(`Postgres is up on port ${server.port} (${initialised}, started in ${seconds(startMs)}).\n`);
      void server.exited.then(() => lifetime.fail(`Postgres exited unexpectedly; see ${logs.fileOf('postgres')}`));
      databaseUrl = await lifetime.race(server.createDatabase(DATABASE_NAME));
    }

    const settings: DocketServiceSettings = {
      authSecret,
      cursorSecret,
      databaseUrl,
      serviceAuthSecret,
    };
    // The console listens first: the front services must allow its origin.
    let consoleServices: { admissionUrl: string; eventsUrl: string } | undefined;
    if (options.consoleRoot !== undefined) {
      consoleServer = await serveConsole({ root: options.consoleRoot, host: DEV_HOST, port: devConsolePort(env), services: () => consoleServices });
    }
    const baseEnv = {
      ...inheritedServiceEnv(env),
      ...(consoleServer === undefined ? {} : { DOCKET_CORS_ORIGINS: devCorsOrigins(env, consoleServer.url) }),
    };
    const launch = (name: ServiceName, index: number, listen: string, stateUrl?: string): LaunchedService => {
      const source = replicaName(name, index, counts);
      const service = launchService({
        name: source,
        entry: options.entryFor(name),
        env: { ...baseEnv, ...serviceEnvironment(name, settings, listen, stateUrl) },
        onLine: (line) => logs.write(source, line),
        detached: true,
      });
      services.get(name)?.push(service);
      void service.exited.then((exit) =>
        lifetime.fail(`the ${source} service exited unexpectedly (${describeExit(exit)})`, service.recentLines()),
      );
      return service;
    };
    const serving = (name: string, url: string): Promise<void> =>
      waitForServing(url, { signal: lifetime.signal }).catch((error: unknown) => {
        throw new Error(`the ${name} service is not healthy: ${(error as Error).message}`);
      });

    const urls = {} as Record<ServiceName, string>;
    let front: { readonly started: Front; readonly layout: FrontLayout } | undefined;
    if (options.oneProcessEntry !== undefined) {
      options.out('Starting state, admission, execution and events in one process ...\n');
      const one = launchOneProcess({
        entry: options.oneProcessEntry,
        env: { ...baseEnv, ...oneProcessEnvironment(settings, (name) => `${DEV_HOST}:${ports[name]}`) },
        onLine: (line) => logs.write('docket', line),
        detached: true,
      });
      // Stopped with state, after nothing: it holds all four.
      services.get('state')?.push(one.service);
      void one.service.exited.then((exit) => lifetime.fail(`the one process exited unexpectedly (${describeExit(exit)})`, one.service.recentLines()));
      const started = await lifetime.race(one.urls);
      for (const name of SERVICE_NAMES) urls[name] = started[name] ?? '';
      consoleServices = { admissionUrl: urls.admission, eventsUrl: urls.events };
    } else if (counts === undefined || programs === undefined) {
      options.out('Starting the state service ...\n');
      urls.state = await lifetime.race(launch('state', 0, `${DEV_HOST}:${ports.state}`).ready);
      options.out('Starting admission, execution and events ...\n');
      const fronts = FRONT_SERVICE_NAMES.map((name) => launch(name, 0, `${DEV_HOST}:${ports[name]}`, urls.state));
      const frontUrls = await lifetime.race(Promise.all(fronts.map((service) => service.ready)));
      FRONT_SERVICE_NAMES.forEach((name, index) => (urls[name] = frontUrls[index] ?? ''));
      consoleServices = { admissionUrl: urls.admission, eventsUrl: urls.events };
    } else {
      const layout = await layOutFront({ host: DEV_HOST, counts, ports });
      options.out(`Starting nginx and its port switch in front of the replicas (${join(dataDir, 'nginx')}) ...\n`);
      frontStarting = startFront({
        programs,
        dir: join(dataDir, 'nginx'),
        accessLog: join(logsDir, 'nginx-access.log'),
        services: layout.services,
        onLine: (line) => logs.write('nginx', line),
        detached: true,
      });
      const started = await lifetime.race(frontStarting);
      front = { started, layout };
      void started.exited.then((exit) => lifetime.fail(`${exit.program} (the front) exited unexpectedly (${describeExit(exit)})`, started.recentLines()));
      for (const name of SERVICE_NAMES) urls[name] = started.urls[name] ?? '';
      options.out(`Starting ${describeCount(counts.state, 'state')} ...\n`);
      const states = layout.replicas.state.map((listen, index) => launch('state', index, listen));
      const stateUrls = await lifetime.race(Promise.all(states.map((service) => service.ready)));
      options.out(`Starting ${FRONT_SERVICE_NAMES.map((name) => describeCount(counts[name], name)).join(', ')} ...\n`);
      // Every front replica reaches state through nginx, as clients reach it, without the port switch (they speak HTTP/2).
      const fronts = FRONT_SERVICE_NAMES.flatMap((name) => layout.replicas[name].map((listen, index) => launch(name, index, listen, started.http2Urls.state)));
      const replicaUrls = await lifetime.race(Promise.all(fronts.map((service) => service.ready)));
      await lifetime.race(
        Promise.all([
          ...states.map((service, index) => serving(service.name, stateUrls[index] ?? '')),
          ...fronts.map((service, index) => serving(service.name, replicaUrls[index] ?? '')),
        ]),
      );
      consoleServices = { admissionUrl: urls.admission, eventsUrl: urls.events };
    }
    await lifetime.race(Promise.all(SERVICE_NAMES.map((name) => serving(name, urls[name]))));

    const ttlSeconds = TOKEN_TTL_DAYS * 24 * 3600;
    options.out(
      formatDevSummary({
        urls,
        consoleUrl: consoleServer?.url,
        databaseUrl,
        embeddedPostgresDir: postgresStarting ? join(dataDir, 'postgres') : undefined,
        secretsFile: devSecretsPath(dataDir),
        logsDir,
        userToken: await mintToken({ secret: authSecret, subject: 'dev', role: 'user', ttlSeconds }),
        workerToken: await mintToken({ secret: authSecret, subject: 'dev-worker', role: 'worker', ttlSeconds }),
        tokenTtlDays: TOKEN_TTL_DAYS,
        healthyAfterMs: performance.now() - began,
        ...(front === undefined
          ? {}
          : {
              front: {
                configFile: front.started.configFile,
                accessLog: front.started.accessLog,
                replicas: front.layout.replicas,
                switchConfigFile: front.started.switchConfigFile,
              },
            }),
      }),
    );
    failure = await lifetime.ended;
  } catch (error) {
    failure = error instanceof LifetimeEnded ? error.failure : (error as Error).message;
  } finally {
    lifetime.close();
    if (failure !== undefined) options.err(`\ndocket dev: ${failure}\n`);
    options.out('Stopping ...\n');
    await Promise.all(
      FRONT_SERVICE_NAMES.flatMap((name) => (services.get(name) ?? []).map((service) => service.stop('SIGTERM', SHUTDOWN_GRACE_MS))),
    );
    await Promise.all((services.get('state') ?? []).map((service) => service.stop('SIGTERM', SHUTDOWN_GRACE_MS)));
    // After the replicas, which reach state through it while they drain; also a front still starting.
    const [frontStart] = await Promise.allSettled(frontStarting === undefined ? [] : [frontStarting]);
    if (frontStart?.status === 'fulfilled') await frontStart.value.stop();
    await consoleServer?.close();
    // Also a server still starting when the session ended (Ctrl-C during initdb).
    const postgres = await postgresStarting?.catch(() => undefined);
    await postgres?.stop();
    await logs.close();
    options.out('Stopped.\n');
  }
  return failure === undefined ? 0 : 1;
}

/** A replica's name in messages and log files: `admission` when it is the only one, else `admission-2`. */
function replicaName(name: ServiceName, index: number, counts: ReplicaCounts | undefined): string {
  return counts === undefined || counts[name] === 1 ? name : `${name}-${index + 1}`;
}

function describeCount(count: number, name: ServiceName): string {
  return count === 1 ? `${name}` : `${count} ${name} replicas`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

async function assertBuilt(entry: string): Promise<void> {
  await access(entry).catch(() => {
    throw new Error(`${entry} does not exist: build the services first (npm run build)`);
  });
}

/** Raised by {@link Lifetime.race} when the session ends before the awaited step. */
class LifetimeEnded extends Error {
  override readonly name = 'LifetimeEnded';
  constructor(readonly failure: string | undefined) {
    super(failure ?? 'stopped');
  }
}

/**
 * The life of one `docket dev` session: it ends when the user stops it or
 * the first failure is reported, whichever comes first, and every startup
 * step is raced against that end so Ctrl-C during startup is prompt.
 */
class Lifetime {
  readonly ended: Promise<string | undefined>;
  readonly #controller = new AbortController();
  #end!: (failure: string | undefined) => void;
  #closed = false;
  readonly #onStop: () => void;
  readonly #stop: AbortSignal;

  constructor(stop: AbortSignal) {
    this.ended = new Promise((resolve) => (this.#end = resolve));
    this.#stop = stop;
    this.#onStop = () => this.#finish(undefined);
    if (stop.aborted) this.#onStop();
    else stop.addEventListener('abort', this.#onStop, { once: true });
  }

  /** Aborted when the session ends; for steps that take a signal. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Ends the session with `message` (and the child's last lines), unless it already ended. */
  fail(message: string, recentLines: readonly string[] = []): void {
    const detail = recentLines.length === 0 ? '' : `; its last lines:\n${recentLines.join('\n')}`;
    this.#finish(`${message}${detail}`);
  }

  /** `step`, unless the session ends first. */
  race<T>(step: Promise<T>): Promise<T> {
    return Promise.race([
      step,
      this.ended.then((failure): never => {
        throw new LifetimeEnded(failure);
      }),
    ]);
  }

  /** From now on, exits are expected: the session is shutting down. */
  close(): void {
    this.#finish(undefined);
    this.#closed = true;
    this.#stop.removeEventListener('abort', this.#onStop);
  }

  #finish(failure: string | undefined): void {
    if (this.#closed || this.#controller.signal.aborted) return;
    this.#controller.abort();
    this.#end(failure);
  }
}

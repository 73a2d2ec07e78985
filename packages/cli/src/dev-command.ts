import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { UsageError, parseCommandArgs, type Command } from './command.js';
import { DEV_LOG_MODES, type DevLogMode } from './dev-log-sink.js';
import { parseReplicaCounts, type ReplicaCounts } from './replica-counts.js';
import { oneProcessEntryPath } from './one-process-launch.js';
import { runDev } from './run-dev.js';
import { serviceEntryPath } from './service-names.js';

/** The repository root, three levels above this file (`packages/cli/{src,dist}/`). */
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');

const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * `docket dev`: the whole system on this machine (`npm start` runs
 * `docket dev --one-process`).
 * The first Ctrl-C (or SIGTERM) stops it in order; a second one kills the
 * services at once.
 */
export const devCommand: Command = {
  name: 'dev',
  summary: 'run the whole system locally: embedded Postgres and the four services',
  help: `Usage: docket dev [--logs=warn|all|none] [--replicas <service>=<n>,... | --one-process]

Runs Docket on this machine: PostgreSQL, then the state service, then
admission, execution and events, each as its own process, and serves the
web console. npm start runs docket dev --one-process. Once all four answer SERVING on grpc.health.v1.Health it prints
their addresses, development tokens and an example call. Ctrl-C stops the
services (state last), then Postgres. If any of them dies, everything is
stopped and the exit code is 1.

Options:
  --logs=<mode>   service log lines shown in the terminal:
                    warn  warnings, errors and non-JSON output (default)
                    all   every line
                    none  nothing
                  Every line is always written to <data dir>/logs/<service>.log,
                  Postgres' log to <data dir>/logs/postgres.log.
  --replicas=<list>
                  run several processes of each service behind nginx, e.g.
                  --replicas admission=3,execution=3,events=2,state=2
                  (unnamed services run once; at most 16 each). Each replica
                  listens on a free port of 127.0.0.1; the services' ports
                  below take HTTP/2 and HTTP/1.1 alike, as one service does
                  (gRPC, gRPC-Web, Connect, JSON): HAProxy listens there and
                  passes each connection to nginx by its protocol, and nginx
                  passes each call to the next replica, round-robin. The
                  front services reach state through nginx too. nginx runs
                  as a child process on <data dir>/nginx/nginx.conf, HAProxy
                  on <data dir>/nginx/port-switch.cfg, rendered from the
                  templates in deploy/nginx and deploy/haproxy; their errors
                  go to <data dir>/logs/nginx.log, one line per call (with
                  the replica that answered) to
                  <data dir>/logs/nginx-access.log, replica i's log to
                  <data dir>/logs/<service>-<i>.log. Needs nginx 1.22 or
                  newer and HAProxy 2.4 or newer (Debian: sudo apt-get
                  install nginx haproxy). See docs/replicas.md.
  --one-process   run the four services in one Node process
                  (services/one-process) on the same ports, admission,
                  execution and events calling state in memory through its
                  own handlers and interceptors instead of a socket; its
                  log lines go to <data dir>/logs/docket.log. What npm
                  start runs: on 2 cores it spends less CPU per job than
                  four processes (docs/benchmarks.md). Not with --replicas.

Environment:
  DOCKET_DATA_DIR         data directory, default .docket: holds postgres/
                          (the embedded cluster, kept across runs),
                          secrets.json and logs/
  DOCKET_DATABASE_URL     use this Postgres instead of the embedded one
  DOCKET_POSTGRES_PORT    port of the embedded Postgres (default: a free port)
  DOCKET_ADMISSION_PORT   default 7401  \\
  DOCKET_EXECUTION_PORT   default 7402   | 0 picks a free port; all services
  DOCKET_EVENTS_PORT      default 7403   | listen on 127.0.0.1
  DOCKET_STATE_PORT       default 7404  /
  DOCKET_CONSOLE_PORT     default 7405: the web console (packages/console)
  DOCKET_NGINX            the nginx --replicas runs (default: nginx on PATH,
                          else /usr/sbin/nginx)
  DOCKET_HAPROXY          the HAProxy --replicas runs (default: haproxy on
                          PATH, else /usr/sbin/haproxy)
  DOCKET_CORS_ORIGINS     browser origins the front services allow (default:
                          the console's own origin)
  DOCKET_AUTH_SECRET      HS256 secret (default: generated into secrets.json)
  DOCKET_CURSOR_SECRET    cursor secret (default: generated into secrets.json)
  DOCKET_SERVICE_AUTH_SECRET  the state service's own secret, which public
                          tokens are never signed with (default: generated
                          into secrets.json)
Other variables (NODE_OPTIONS, OTEL_*, ...) are passed on to the services.
`,
  async run(args, context) {
    const { logMode, replicas, oneProcess } = parseDevArgs(args);
    const stop = new AbortController();
    let interrupts = 0;
    const onSignal = (): void => {
      interrupts += 1;
      if (interrupts === 1) {
        context.err('\n(Ctrl-C again kills the services at once.)\n');
        stop.abort();
      } else {
        // The exit hooks SIGKILL the services and ask Postgres for a fast shutdown.
        process.exit(130);
      }
    };
    // SIGHUP too: the services run in their own process groups, so a closed
    // terminal must not end this process without stopping them.
    for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
    try {
      return await runDev({
        env: context.env,
        cwd: context.cwd,
        out: context.out,
        err: context.err,
        logMode,
        colors: process.stdout.isTTY === true && !context.env['NO_COLOR'],
        entryFor: (name) => serviceEntryPath(REPO_ROOT, name),
        consoleRoot: resolve(REPO_ROOT, 'packages', 'console', 'dist'),
        stop: stop.signal,
        ...(replicas === undefined ? {} : { replicas }),
        ...(oneProcess ? { oneProcessEntry: oneProcessEntryPath(REPO_ROOT) } : {}),
      });
    } finally {
      for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    }
  },
};

function parseDevArgs(args: readonly string[]): { logMode: DevLogMode; replicas: ReplicaCounts | undefined; oneProcess: boolean } {
  const { logs, replicas, 'one-process': oneProcess = false } = parseCommandArgs(args, { logs: { type: 'string' }, replicas: { type: 'string' }, 'one-process': { type: 'boolean' } }, 'none').values;
  const logMode = logs === undefined ? 'warn' : DEV_LOG_MODES.find((candidate) => candidate === logs);
  if (!logMode) throw new UsageError(`--logs must be one of ${DEV_LOG_MODES.join(', ')}`);
  if (oneProcess && replicas !== undefined) throw new UsageError('--one-process and --replicas cannot be combined');
  try {
    return { logMode, replicas: replicas === undefined ? undefined : parseReplicaCounts(replicas), oneProcess };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

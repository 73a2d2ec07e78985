import { constants } from 'node:fs';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { delimiter, join } from 'node:path';
import { freePort } from './free-port.js';
import { loadNginxFrontTemplate, renderNginxFrontConfig, type FrontedService } from './nginx-front-config.js';
import type { ReplicaCounts } from './replica-counts.js';
import { SERVICE_NAMES, type ServiceName } from './service-names.js';
import { describeExit, superviseChild, type ServiceExit } from './supervised-child.js';

/** The services a browser calls (the console): the front gives them an HTTP/1.1 listener too. */
export const BROWSER_SERVICES: readonly ServiceName[] = ['admission', 'events'];

/** Where nginx is looked for after `PATH` (`/usr/sbin` is often not on a user's PATH). */
const NGINX_FALLBACK_DIRS = ['/usr/sbin', '/usr/local/sbin', '/usr/local/nginx/sbin'];

/** nginx was asked for and is not installed (or `DOCKET_NGINX` names no executable). */
export class NginxMissingError extends Error {
  override readonly name = 'NginxMissingError';
}

/**
 * The nginx executable: `DOCKET_NGINX` when set, else `nginx` on `PATH` or
 * in `fallbackDirs` (/usr/sbin, /usr/local/sbin, ...). Throws {@link NginxMissingError} naming
 * the Debian package when there is none.
 */
export async function locateNginx(env: NodeJS.ProcessEnv, fallbackDirs: readonly string[] = NGINX_FALLBACK_DIRS): Promise<string> {
  const configured = env['DOCKET_NGINX'];
  if (configured !== undefined && configured !== '') {
    if (await isExecutable(configured)) return configured;
    throw new NginxMissingError(
      `the replicas run behind nginx, and DOCKET_NGINX is ${JSON.stringify(configured)}, which is not an executable file: ` +
        "install Debian's nginx package (sudo apt-get install nginx), or point DOCKET_NGINX at an nginx 1.22 or newer",
    );
  }
  const dirs = [...(env['PATH'] ?? '').split(delimiter).filter((dir) => dir !== ''), ...fallbackDirs];
  for (const dir of dirs) {
    const candidate = join(dir, 'nginx');
    if (await isExecutable(candidate)) return candidate;
  }
  throw new NginxMissingError(
    'the replicas run behind nginx, which is not installed (looked on PATH and in /usr/sbin): ' +
      "install Debian's nginx package (sudo apt-get install nginx), or set DOCKET_NGINX to an nginx 1.22 or newer",
  );
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where every process of a fronted system listens. */
export interface FrontLayout {
  /** The front's view of each service, for {@link startNginxFront}. */
  readonly services: readonly FrontedService[];
  /** `host:port` of each replica, by service, in replica order. */
  readonly replicas: Readonly<Record<ServiceName, readonly string[]>>;
}

/**
 * Picks the ports of a fronted system on `host`: each service's HTTP/2
 * listener is `ports[name]` (0 picks a free port), every replica and every
 * HTTP/1.1 listener of a {@link BROWSER_SERVICES} service a free port.
 */
export async function layOutFront(options: {
  readonly host: string;
  readonly counts: ReplicaCounts;
  readonly ports: Readonly<Record<ServiceName, number>>;
}): Promise<FrontLayout> {
  const { host } = options;
  const address = async (port = 0): Promise<string> => `${host}:${port === 0 ? await freePort(host) : port}`;
  const replicas = {} as Record<ServiceName, string[]>;
  const services: FrontedService[] = [];
  for (const name of SERVICE_NAMES) {
    replicas[name] = [];
    for (let index = 0; index < options.counts[name]; index += 1) replicas[name].push(await address());
    services.push({
      name,
      listen: await address(options.ports[name]),
      ...(BROWSER_SERVICES.includes(name) ? { http1Listen: await address() } : {}),
      replicas: replicas[name],
    });
  }
  return { services, replicas };
}

/** Options for {@link startNginxFront}. */
export interface NginxFrontOptions {
  /** The nginx executable ({@link locateNginx}). */
  readonly nginx: string;
  /** The front's directory: its configuration, pid file and temporary files (created if missing). */
  readonly dir: string;
  /** Its access log (its directory must exist). */
  readonly accessLog: string;
  readonly services: readonly FrontedService[];
  /** Every line nginx writes to its error log (stderr). */
  readonly onLine?: (line: string) => void;
  /** Own process group (see `superviseChild`); default false. */
  readonly detached?: boolean;
  /** How long nginx has to accept connections on every listener; default 15 s. */
  readonly readyTimeoutMs?: number;
}

/** A running nginx front. */
export interface NginxFront {
  /** The rendered configuration, `<dir>/nginx.conf`. */
  readonly configFile: string;
  readonly accessLog: string;
  /** `http://host:port` of each service's HTTP/2 listener: the address clients use. */
  readonly urls: Readonly<Partial<Record<ServiceName, string>>>;
  /** `http://host:port` of the HTTP/1.1 listeners (browsers). */
  readonly http1Urls: Readonly<Partial<Record<ServiceName, string>>>;
  /** The nginx process id. */
  readonly pid: number | undefined;
  /** Settles when nginx has exited; never rejects. */
  readonly exited: Promise<ServiceExit>;
  /** nginx's last error-log lines, for messages. */
  recentLines(): string[];
  /** SIGTERM (nginx closes every connection at once), SIGKILL after `graceMs` (default 5 s). */
  stop(graceMs?: number): Promise<ServiceExit>;
}

/**
 * Renders the front's configuration into `<dir>/nginx.conf` from the
 * template in `deploy/nginx/` and runs nginx on it in the foreground
 * (`nginx -e stderr -p <dir> -c <dir>/nginx.conf`), a single process that
 * is SIGKILLed if this process exits without stopping it. An nginx still
 * running on that configuration (its parent was SIGKILLed, so could not
 * stop it) is stopped first: it would hold the ports. Resolves once
 * every listener accepts connections; rejects with nginx's own words if
 * it exits first (a port in use, a configuration it refuses).
 */
export async function startNginxFront(options: NginxFrontOptions): Promise<NginxFront> {
  await mkdir(join(options.dir, 'temp'), { recursive: true });
  const configFile = join(options.dir, 'nginx.conf');
  const stale = await stopStaleFront(join(options.dir, 'nginx.pid'), configFile);
  if (stale !== undefined) options.onLine?.(`[docket] stopped nginx ${stale}, left running on ${configFile} by an earlier run that was killed`);
  const listeners = options.services.flatMap((service) => [service.listen, ...(service.http1Listen === undefined ? [] : [service.http1Listen])]);
  // nginx retries a busy port for seconds, and meanwhile whatever holds it would pass for nginx.
  for (const address of listeners) {
    if (await accepts(address)) throw new Error(`${address} is in use: the front cannot listen there (stop what holds it, or choose another DOCKET_<SERVICE>_PORT)`);
  }
  const config = renderNginxFrontConfig({ dir: options.dir, accessLog: options.accessLog, services: options.services }, await loadNginxFrontTemplate());
  await writeFile(configFile, config);
  const nginx = superviseChild({
    name: 'nginx',
    file: options.nginx,
    args: ['-e', 'stderr', '-p', options.dir, '-c', configFile],
    env: { PATH: process.env['PATH'] ?? '' },
    ...(options.onLine === undefined ? {} : { onLine: options.onLine }),
    ...(options.detached === undefined ? {} : { detached: options.detached }),
  });
  try {
    await acceptingConnections(listeners, nginx.exited, options.readyTimeoutMs ?? 15_000);
  } catch (error) {
    await nginx.stop('SIGTERM', 5_000);
    const tail = nginx.recentLines();
    throw new Error(`nginx (${configFile}) ${(error as Error).message}${tail.length === 0 ? '' : `; it said:\n${tail.join('\n')}`}`);
  }
  const urls: Partial<Record<ServiceName, string>> = {};
  const http1Urls: Partial<Record<ServiceName, string>> = {};
  for (const service of options.services) {
    urls[service.name] = `http://${service.listen}`;
    if (service.http1Listen !== undefined) http1Urls[service.name] = `http://${service.http1Listen}`;
  }
  return {
    configFile,
    accessLog: options.accessLog,
    urls,
    http1Urls,
    pid: nginx.child.pid,
    exited: nginx.exited,
    recentLines: nginx.recentLines,
    stop: (graceMs = 5_000) => nginx.stop('SIGTERM', graceMs),
  };
}

/** Resolves once every `host:port` accepts a TCP connection; rejects if `exited` settles or `timeoutMs` passes first. */
async function acceptingConnections(addresses: readonly string[], exited: Promise<ServiceExit>, timeoutMs: number): Promise<void> {
  let exit: ServiceExit | undefined;
  void exited.then((settled) => (exit = settled));
  const deadline = performance.now() + timeoutMs;
  for (const address of addresses) {
    for (;;) {
      if (exit !== undefined) throw new Error(`exited before listening (${describeExit(exit)})`);
      if (await accepts(address)) break;
      if (performance.now() > deadline) throw new Error(`did not listen on ${address} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

function accepts(address: string): Promise<boolean> {
  const split = address.lastIndexOf(':');
  const host = address.slice(0, split).replace(/^\[|\]$/g, '');
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(address.slice(split + 1)) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/**
 * Stops the nginx whose pid `<dir>/nginx.pid` holds if that process still
 * runs nginx on `configFile` (its `/proc/<pid>/cmdline` says so; where
 * there is no /proc nothing is stopped): SIGTERM, SIGKILL after 5 s.
 * Resolves with its pid, or `undefined` when there was none.
 */
async function stopStaleFront(pidFile: string, configFile: string): Promise<number | undefined> {
  const pid = Number((await readIfPresent(pidFile))?.trim());
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const command = (await readIfPresent(`/proc/${pid}/cmdline`))?.split('\0') ?? [];
  if (!command[0]?.endsWith('nginx') || !command.includes(configFile)) return undefined;
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    if (!(await isRunning(pid))) break;
    process.kill(pid, signal);
    const deadline = performance.now() + 5_000;
    while ((await isRunning(pid)) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return pid;
}

/** Whether `pid` is a process that has not exited (a zombie, exited but not reaped, holds no port). */
async function isRunning(pid: number): Promise<boolean> {
  const stat = await readIfPresent(`/proc/${pid}/stat`);
  return stat !== undefined && !/^\d+ \(.*\) Z/.test(stat);
}

/** A file's text, or `undefined` if it does not exist. */
async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ESRCH') return undefined;
    throw error;
  }
}

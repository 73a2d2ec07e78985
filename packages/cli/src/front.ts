import { mkdir, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import type { FrontPrograms } from './front-programs.js';
import { loadNginxFrontTemplate, renderNginxFrontConfig, type FrontedService } from './nginx-front-config.js';
import { loadPortSwitchTemplate, renderPortSwitchConfig } from './port-switch-config.js';
import type { ReplicaCounts } from './replica-counts.js';
import { SERVICE_NAMES, type ServiceName } from './service-names.js';
import { stopStaleProcess } from './stale-process.js';
import { describeExit, superviseChild, type ServiceExit, type SupervisedChild } from './supervised-child.js';

/** Where every process of a fronted system listens. */
export interface FrontLayout {
  /** The front's view of each service, for {@link startFront}. */
  readonly services: readonly FrontedService[];
  /** `host:port` of each replica, by service, in replica order. */
  readonly replicas: Readonly<Record<ServiceName, readonly string[]>>;
}

/**
 * Picks the ports of a fronted system on `host`: each service's port
 * (where clients call it, the port switch's) is `ports[name]` (0 picks a
 * free port); nginx's two listeners per service and every replica get a
 * free port each.
 */
export async function layOutFront(options: {
  readonly host: string;
  readonly counts: ReplicaCounts;
  readonly ports: Readonly<Record<ServiceName, number>>;
}): Promise<FrontLayout> {
  const { host } = options;
  // The operating system may offer a port again once the probe that found it closed: none is handed out twice.
  const taken = new Set(Object.values(options.ports).filter((port) => port !== 0));
  const address = async (port = 0): Promise<string> => {
    if (port !== 0) return `${host}:${port}`;
    let free = await freePort(host);
    while (taken.has(free)) free = await freePort(host);
    taken.add(free);
    return `${host}:${free}`;
  };
  const replicas = {} as Record<ServiceName, string[]>;
  const services: FrontedService[] = [];
  for (const name of SERVICE_NAMES) {
    replicas[name] = [];
    for (let index = 0; index < options.counts[name]; index += 1) replicas[name].push(await address());
    services.push({ name, listen: await address(options.ports[name]), http2Listen: await address(), http1Listen: await address(), replicas: replicas[name] });
  }
  return { services, replicas };
}

/** Options for {@link startFront}. */
export interface FrontOptions {
  /** nginx and HAProxy ({@link locateFrontPrograms}). */
  readonly programs: FrontPrograms;
  /** The front's directory: its configurations, pid files and temporary files (created if missing). */
  readonly dir: string;
  /** nginx's access log (its directory must exist). */
  readonly accessLog: string;
  readonly services: readonly FrontedService[];
  /** Every line nginx or HAProxy writes to its error log (stderr), after the program's name. */
  readonly onLine?: (line: string) => void;
  /** Own process groups (see `superviseChild`); default false. */
  readonly detached?: boolean;
  /** How long each program has to accept connections on every listener; default 15 s. */
  readonly readyTimeoutMs?: number;
}

/** A running front: nginx before the replicas, and the port switch before nginx. */
export interface Front {
  /** nginx's rendered configuration, `<dir>/nginx.conf`. */
  readonly configFile: string;
  /** The port switch's, `<dir>/port-switch.cfg`. */
  readonly switchConfigFile: string;
  readonly accessLog: string;
  /** `http://host:port` of each service's port, HTTP/2 and HTTP/1.1 alike: the address clients use. */
  readonly urls: Readonly<Partial<Record<ServiceName, string>>>;
  /** `http://host:port` of nginx's HTTP/2 listener of each service: where the services' own calls to state go, a hop shorter. */
  readonly http2Urls: Readonly<Partial<Record<ServiceName, string>>>;
  /** The process ids of nginx and of HAProxy. */
  readonly pids: { readonly nginx: number | undefined; readonly haproxy: number | undefined };
  /** Settles when either program has exited (the front no longer works); never rejects. */
  readonly exited: Promise<ServiceExit & { readonly program: string }>;
  /** The programs' last error-log lines, for messages. */
  recentLines(): string[];
  /** SIGTERM to the switch, then to nginx (each closes its connections at once), SIGKILL after `graceMs` (default 5 s). */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Renders the front's configurations into `<dir>` from the templates in
 * `deploy/nginx/` and `deploy/haproxy/` and runs nginx (`nginx -e stderr
 * -p <dir> -c <dir>/nginx.conf`, one process) and then HAProxy (`haproxy
 * -db -f <dir>/port-switch.cfg`, one process) in the foreground, each
 * SIGKILLed if this process exits without stopping it. Either still
 * running on these configurations (its parent was SIGKILLed, so could not
 * stop it) is stopped first: it would hold the ports. Resolves once every
 * listener accepts connections; rejects with the program's own words if
 * it exits first (a port in use, a configuration it refuses).
 */
export async function startFront(options: FrontOptions): Promise<Front> {
  await mkdir(join(options.dir, 'temp'), { recursive: true });
  const configFile = join(options.dir, 'nginx.conf');
  const switchConfigFile = join(options.dir, 'port-switch.cfg');
  const switchPidFile = join(options.dir, 'port-switch.pid');
  for (const [pidFile, program, config] of [
    [join(options.dir, 'nginx.pid'), 'nginx', configFile],
    [switchPidFile, 'haproxy', switchConfigFile],
  ] as const) {
    const stale = await stopStaleProcess(pidFile, program, config);
    if (stale !== undefined) options.onLine?.(`[docket] stopped ${program} ${stale}, left running on ${config} by an earlier run that was killed`);
  }
  const nginxListeners = options.services.flatMap((service) => [service.http2Listen, service.http1Listen]);
  const switchListeners = options.services.map((service) => service.listen);
  // Both retry a busy port for seconds, and meanwhile whatever holds it would pass for them.
  for (const address of [...switchListeners, ...nginxListeners]) {
    if (await accepts(address)) throw new Error(`${address} is in use: the front cannot listen there (stop what holds it, or choose another DOCKET_<SERVICE>_PORT)`);
  }
  await writeFile(configFile, renderNginxFrontConfig({ dir: options.dir, accessLog: options.accessLog, services: options.services }, await loadNginxFrontTemplate()));
  await writeFile(switchConfigFile, renderPortSwitchConfig(options.services, await loadPortSwitchTemplate()));

  const started: SupervisedChild[] = [];
  const run = async (program: string, file: string, args: string[], config: string, listeners: readonly string[]): Promise<SupervisedChild> => {
    const child = superviseChild({
      name: program,
      file,
      args,
      env: { PATH: process.env['PATH'] ?? '' },
      ...(options.onLine === undefined ? {} : { onLine: (line: string) => options.onLine?.(`${program}: ${line}`) }),
      ...(options.detached === undefined ? {} : { detached: options.detached }),
    });
    started.push(child);
    try {
      await acceptingConnections(listeners, child.exited, options.readyTimeoutMs ?? 15_000);
    } catch (error) {
      const tail = child.recentLines();
      throw new Error(`${program} (${config}) ${(error as Error).message}${tail.length === 0 ? '' : `; it said:\n${tail.join('\n')}`}`);
    }
    return child;
  };
  const stop = async (graceMs = 5_000): Promise<void> => {
    for (const child of [...started].reverse()) await child.stop('SIGTERM', graceMs);
    await rm(switchPidFile, { force: true });
  };
  let nginx: SupervisedChild;
  let haproxy: SupervisedChild;
  try {
    nginx = await run('nginx', options.programs.nginx, ['-e', 'stderr', '-p', options.dir, '-c', configFile], configFile, nginxListeners);
    haproxy = await run('haproxy', options.programs.haproxy, ['-db', '-f', switchConfigFile], switchConfigFile, switchListeners);
    // HAProxy writes no pid file in the foreground: this one lets a later run stop it (stopStaleProcess).
    await writeFile(switchPidFile, `${haproxy.child.pid ?? ''}\n`);
  } catch (error) {
    await stop();
    throw error;
  }
  const urls: Partial<Record<ServiceName, string>> = {};
  const http2Urls: Partial<Record<ServiceName, string>> = {};
  for (const service of options.services) {
    urls[service.name] = `http://${service.listen}`;
    http2Urls[service.name] = `http://${service.http2Listen}`;
  }
  return {
    configFile,
    switchConfigFile,
    accessLog: options.accessLog,
    urls,
    http2Urls,
    pids: { nginx: nginx.child.pid, haproxy: haproxy.child.pid },
    exited: Promise.race(started.map((child) => child.exited.then((exit) => ({ ...exit, program: child.name })))),
    recentLines: () => started.flatMap((child) => child.recentLines().map((line) => `${child.name}: ${line}`)),
    stop,
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

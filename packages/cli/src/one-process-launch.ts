import { join } from 'node:path';
import { launchService, type LaunchedService } from './launch-service.js';
import { serviceEnvironment, type DocketServiceSettings } from './service-environment.js';
import { SERVICE_NAMES, type ServiceName } from './service-names.js';

/** `<repoRoot>/services/one-process/dist/main.js`: the four services in one process. */
export function oneProcessEntryPath(repoRoot: string): string {
  return join(repoRoot, 'services', 'one-process', 'dist', 'main.js');
}

/**
 * The environment of the one process (`services/one-process`): every
 * service's settings, as {@link serviceEnvironment} gives them to four
 * processes, and where each listens, `DOCKET_<NAME>_LISTEN` (`host:port`).
 * The front services find state in the same process, so there is no
 * `DOCKET_STATE_URL`.
 */
export function oneProcessEnvironment(settings: DocketServiceSettings, listenOf: (name: ServiceName) => string): Record<string, string> {
  const env: Record<string, string> = { ...serviceEnvironment('admission', settings, '', 'in this process'), ...serviceEnvironment('state', settings, '') };
  delete env['DOCKET_LISTEN'];
  delete env['DOCKET_STATE_URL'];
  for (const name of SERVICE_NAMES) env[`DOCKET_${name.toUpperCase()}_LISTEN`] = listenOf(name);
  return env;
}

/** The one process, launched. */
export interface LaunchedOneProcess {
  readonly service: LaunchedService;
  /**
   * Each service's URL, once all of them listen (the process's
   * `{"msg":"all listening","urls"}` line); rejects as `service.ready` does
   * if the process exits or stays silent first.
   */
  readonly urls: Promise<Partial<Record<ServiceName, string>>>;
}

/** Launches the one process (see {@link launchService} for `options`). */
export function launchOneProcess(options: Omit<Parameters<typeof launchService>[0], 'name'>): LaunchedOneProcess {
  let listening!: (urls: Partial<Record<ServiceName, string>>) => void;
  const allListening = new Promise<Partial<Record<ServiceName, string>>>((resolve) => (listening = resolve));
  const service = launchService({
    ...options,
    name: 'docket',
    onLine: (line, stream) => {
      const urls = parseAllListening(line);
      if (urls !== undefined) listening(urls);
      options.onLine?.(line, stream);
    },
  });
  // `ready` is the first service's listening line; the process exiting before all of them rejects `urls` too.
  const urls = service.ready.then(() =>
    Promise.race([allListening, service.exited.then((): never => { throw new Error('the one process exited before all its services listened'); })]),
  );
  return { service, urls };
}

/** The URLs of the one process's `{"msg":"all listening","urls"}` line, else undefined. */
export function parseAllListening(line: string): Partial<Record<ServiceName, string>> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const record = JSON.parse(line) as { msg?: unknown; urls?: unknown };
    if (record.msg !== 'all listening' || typeof record.urls !== 'object' || record.urls === null) return undefined;
    return Object.fromEntries(Object.entries(record.urls).filter(([name, url]) => (SERVICE_NAMES as readonly string[]).includes(name) && typeof url === 'string'));
  } catch {
    return undefined;
  }
}

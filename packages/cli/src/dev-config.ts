import { DEFAULT_SERVICE_PORTS, SERVICE_NAMES, type ServiceName } from './service-names.js';

/** Where `docket dev` binds; local only. */
export const DEV_HOST = '127.0.0.1';

/** Variables `docket dev` sets per service; inherited values are dropped. */
const MANAGED_VARIABLES = [
  'DOCKET_LISTEN',
  'DOCKET_DATABASE_URL',
  'DOCKET_STATE_URL',
  'DOCKET_SERVICE_AUTH_SECRET',
  'DOCKET_AUTH_SECRET',
  'DOCKET_CURSOR_SECRET',
];

/**
 * The port of each service: `DOCKET_<NAME>_PORT` (0 picks a free port),
 * else the SPEC default (admission 7401, execution 7402, events 7403,
 * state 7404).
 */
export function devServicePorts(env: NodeJS.ProcessEnv): Record<ServiceName, number> {
  const ports = { ...DEFAULT_SERVICE_PORTS };
  for (const name of SERVICE_NAMES) {
    const port = parsePort(env, `DOCKET_${name.toUpperCase()}_PORT`);
    if (port !== undefined) ports[name] = port;
  }
  return ports;
}

/** The web console's port under `docket dev` when `DOCKET_CONSOLE_PORT` is unset. */
export const DEFAULT_CONSOLE_PORT = 7405;

/** `DOCKET_CONSOLE_PORT` (0 picks a free port), else {@link DEFAULT_CONSOLE_PORT}. */
export function devConsolePort(env: NodeJS.ProcessEnv): number {
  return parsePort(env, 'DOCKET_CONSOLE_PORT') ?? DEFAULT_CONSOLE_PORT;
}

/**
 * The browser origins the front services allow under `docket dev`:
 * `DOCKET_CORS_ORIGINS` when set, else the console's own origin by address
 * and by name (`http://127.0.0.1:<port>`, `http://localhost:<port>`).
 */
export function devCorsOrigins(env: NodeJS.ProcessEnv, consoleUrl: string): string {
  const configured = env['DOCKET_CORS_ORIGINS'];
  if (configured !== undefined && configured.trim() !== '') return configured;
  const { port } = new URL(consoleUrl);
  return [`http://${DEV_HOST}:${port}`, `http://localhost:${port}`].join(',');
}

/** `DOCKET_POSTGRES_PORT` for the embedded Postgres; `undefined` picks a free port. */
export function devPostgresPort(env: NodeJS.ProcessEnv): number | undefined {
  return parsePort(env, 'DOCKET_POSTGRES_PORT') || undefined;
}

/**
 * The environment a service child starts from: this process's, minus the
 * variables `docket dev` decides per service, so other settings (NODE_OPTIONS,
 * OTEL_*, unmanaged DOCKET_* options) still reach the services.
 */
export function inheritedServiceEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const inherited = { ...env };
  for (const key of MANAGED_VARIABLES) delete inherited[key];
  return inherited;
}

function parsePort(env: NodeJS.ProcessEnv, variable: string): number | undefined {
  const value = env[variable];
  if (value === undefined || value === '') return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65_535) {
    throw new Error(`${variable} must be a port number (0 to 65535), got ${JSON.stringify(value)}`);
  }
  return port;
}

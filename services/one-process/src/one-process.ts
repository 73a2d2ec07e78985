import { startAdmissionService } from '@docket/admission-service/start';
import { startEventsService } from '@docket/events-service/start';
import { startExecutionService } from '@docket/execution-service/start';
import { answerInProcess, type Environment, type Logger, type StartedService } from '@docket/service-kit';
import { startStateService } from '@docket/state-service/start';

/** The four services, in the order they start: state first, which the others call. */
export const ONE_PROCESS_SERVICES = ['state', 'admission', 'execution', 'events'] as const;
export type OneProcessService = (typeof ONE_PROCESS_SERVICES)[number];

const STARTS: Record<OneProcessService, (env: Environment, logger: Logger) => Promise<StartedService>> = {
  state: startStateService,
  admission: startAdmissionService,
  execution: startExecutionService,
  events: startEventsService,
};

/** The variable that says where one service of the process listens, e.g. `DOCKET_ADMISSION_LISTEN`. */
export function listenVariableOf(name: OneProcessService): string {
  return `DOCKET_${name.toUpperCase()}_LISTEN`;
}

/** The four services running in this process. */
export interface OneProcess {
  /** Each started service's URL. */
  readonly urls: Readonly<Partial<Record<OneProcessService, string>>>;
  /** Drains the front services, then state, each within `graceMs`, then closes what each holds. */
  stop(graceMs: number): Promise<void>;
}

/**
 * Starts state, admission, execution and events in this process, each from
 * the start function its own `main.ts` runs and with the same environment
 * (SPEC section 12), except where it listens: `DOCKET_<NAME>_LISTEN`
 * (`host:port`; unset, the service's default port). The front services
 * reach state at its URL, and state answers them in memory
 * (`answerInProcess`): the same handlers and interceptors, no socket.
 * Clients reach every service over its port, as they reach four processes.
 * `DOCKET_ONE_PROCESS_SERVICES` (comma-separated, default all four; state
 * always) leaves some out, as a benchmark that needs no events service does.
 */
export async function startOneProcess(env: Environment, loggerOf: (name: OneProcessService) => Logger): Promise<OneProcess> {
  const names = servicesOf(env);
  const started: { name: OneProcessService; service: StartedService }[] = [];
  let stopInMemory = (): void => {};
  const stop = async (graceMs: number): Promise<void> => {
    const fronts = started.filter(({ name }) => name !== 'state');
    const state = started.filter(({ name }) => name === 'state');
    await Promise.all(fronts.map(({ service }) => service.server.shutdown(graceMs)));
    await Promise.all(state.map(({ service }) => service.server.shutdown(graceMs)));
    stopInMemory();
    for (const { service } of [...fronts, ...state]) await service.onStopped?.();
  };
  try {
    const urls: Partial<Record<OneProcessService, string>> = {};
    for (const name of names) {
      const own: Record<string, string | undefined> = { ...env, DOCKET_LISTEN: env[listenVariableOf(name)] };
      if (name !== 'state') own['DOCKET_STATE_URL'] = urls.state;
      const service = await STARTS[name](own, loggerOf(name));
      started.push({ name, service });
      urls[name] = service.server.url;
      if (name === 'state') stopInMemory = answerInProcess(service.server.inProcess);
    }
    return { urls, stop };
  } catch (error) {
    await stop(0);
    throw error;
  }
}

/** The services `DOCKET_ONE_PROCESS_SERVICES` names, in start order; all four when unset. */
export function servicesOf(env: Environment): readonly OneProcessService[] {
  const listed = env['DOCKET_ONE_PROCESS_SERVICES'];
  if (listed === undefined || listed.trim() === '') return ONE_PROCESS_SERVICES;
  const names = listed.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !(ONE_PROCESS_SERVICES as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`DOCKET_ONE_PROCESS_SERVICES names unknown services (${unknown.join(', ')}); known: ${ONE_PROCESS_SERVICES.join(', ')}`);
  if (!names.includes('state')) throw new Error('DOCKET_ONE_PROCESS_SERVICES must include state, which the others call');
  return ONE_PROCESS_SERVICES.filter((name) => names.includes(name));
}

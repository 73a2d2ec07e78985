/** The status a service can be set to. */
export type ServingStatus = 'SERVING' | 'NOT_SERVING';

/** What a Watch reports: a status, or that the name is not (yet) known. */
export type WatchedStatus = ServingStatus | 'SERVICE_UNKNOWN';

/**
 * The serving status behind `grpc.health.v1.Health` for the whole server
 * (`""`) and each served service (its fully-qualified name).
 *
 * The overall status `""` is SERVING only while it and every service are
 * SERVING, so a Kubernetes probe of `""` fails as soon as one service (say,
 * the state service while its database is down) reports NOT_SERVING.
 */
export interface HealthRegistry {
  /**
   * Sets the status of a service (or of `""`). Setting an unknown name makes
   * it known. Ignored once {@link HealthRegistry.shutdown} was called, so
   * nothing turns a draining server back to SERVING.
   */
  setStatus(service: string, status: ServingStatus): void;
  /** The reported status of a name, or undefined if it is unknown. */
  status(service: string): ServingStatus | undefined;
  /** Every known name with its reported status, `""` first. */
  entries(): [service: string, status: ServingStatus][];
  /**
   * The reported status of `service` now and after every change, without
   * repeats (SERVICE_UNKNOWN while the name is unknown). Ends after yielding
   * NOT_SERVING once shutdown began, or when `signal` aborts.
   */
  watch(service: string, signal: AbortSignal): AsyncIterable<WatchedStatus>;
  /** Turns every name NOT_SERVING for good and ends every watch. Idempotent. */
  shutdown(): void;
  /** Whether {@link HealthRegistry.shutdown} was called. */
  readonly isShutDown: boolean;
}

/**
 * Creates a registry in which `""` and each of `services` are SERVING.
 *
 * @param services fully-qualified names of the services this process serves
 */
export function createHealthRegistry(services: readonly string[]): HealthRegistry {
  const own = new Map<string, ServingStatus>([['', 'SERVING']]);
  for (const service of services) own.set(service, 'SERVING');
  const listeners = new Set<() => void>();
  let shutDown = false;

  const status = (service: string): ServingStatus | undefined => {
    const set = own.get(service);
    if (set === undefined) return undefined;
    if (shutDown) return 'NOT_SERVING';
    if (service !== '') return set;
    return [...own.values()].every((s) => s === 'SERVING') ? 'SERVING' : 'NOT_SERVING';
  };
  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };

  async function* watch(service: string, signal: AbortSignal): AsyncGenerator<WatchedStatus> {
    let changed = true;
    let wake: (() => void) | undefined;
    const onChange = (): void => {
      changed = true;
      wake?.();
    };
    const onAbort = (): void => wake?.();
    listeners.add(onChange);
    signal.addEventListener('abort', onAbort);
    try {
      let last: WatchedStatus | undefined;
      while (!signal.aborted) {
        if (changed) {
          changed = false;
          const current = status(service) ?? 'SERVICE_UNKNOWN';
          if (current !== last) {
            last = current;
            yield current;
            // The consumer may have changed things while we were suspended.
            continue;
          }
        }
        // Shutdown marks a change, so reaching here means its status was sent.
        if (shutDown) return;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      listeners.delete(onChange);
      signal.removeEventListener('abort', onAbort);
    }
  }

  return {
    setStatus(service, next) {
      if (shutDown || own.get(service) === next) return;
      own.set(service, next);
      notify();
    },
    status,
    entries: () => [...own.keys()].map((service) => [service, status(service) ?? 'NOT_SERVING']),
    watch,
    shutdown() {
      if (shutDown) return;
      shutDown = true;
      notify();
    },
    get isShutDown() {
      return shutDown;
    },
  };
}

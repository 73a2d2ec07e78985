import { createClient, type Transport } from '@connectrpc/connect';
import { Health, HealthCheckResponse_ServingStatus } from '@docket/proto/grpc/health/v1/health_pb.js';
import type { HealthRegistry } from './health-registry.js';
import type { Logger } from './logger.js';

/** The dependency a service cannot serve without, and how to tell it is there. */
export interface DependencyProbe {
  /** Its name in logs (`postgres`, `state`); never an address. */
  readonly name: string;
  /** Resolves when the dependency answers, rejects (or times out) when it does not. */
  readonly check: (signal: AbortSignal) => Promise<void>;
}

/** How often a dependency is checked, and how long one check may take. */
const PROBE_INTERVAL_MS = 2_000;
const PROBE_TIMEOUT_MS = 1_500;

/**
 * Keeps `services` NOT_SERVING in `health` while `probe` fails, and SERVING
 * again once it answers, checking every {@link PROBE_INTERVAL_MS}: a load
 * balancer or a Kubernetes probe of the overall status `""` then stops
 * sending work to a process that cannot do it. Logs once per outage, by the
 * dependency's name only. Stops with `signal`.
 */
export function watchDependency(health: HealthRegistry, services: readonly string[], probe: DependencyProbe, logger: Logger, signal: AbortSignal): void {
  let down = false;
  const round = async (): Promise<void> => {
    const timeout = AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]);
    let ok: boolean;
    try {
      // A check that ignores its signal (a pool waiting for a connection) still counts as failed at the timeout.
      await Promise.race([
        probe.check(timeout),
        new Promise<never>((_, reject) => timeout.addEventListener('abort', () => reject(new Error('probe timed out')), { once: true })),
      ]);
      ok = true;
    } catch {
      ok = false;
    }
    if (signal.aborted || health.isShutDown) return;
    if (ok === down) {
      down = !ok;
      if (down) logger.warn('dependency unreachable: reporting NOT_SERVING', { dependency: probe.name });
      else logger.info('dependency reachable again: reporting SERVING', { dependency: probe.name });
      for (const service of services) health.setStatus(service, ok ? 'SERVING' : 'NOT_SERVING');
    }
  };
  const timer = setInterval(() => void round(), PROBE_INTERVAL_MS);
  timer.unref();
  signal.addEventListener('abort', () => clearInterval(timer), { once: true });
}

/** A probe of another Docket service's overall health (`""` must be SERVING), over `transport`. */
export function serviceHealthProbe(name: string, transport: Transport): DependencyProbe {
  const client = createClient(Health, transport);
  return {
    name,
    async check(signal) {
      const { status } = await client.check({ service: '' }, { signal });
      if (status !== HealthCheckResponse_ServingStatus.SERVING) throw new Error(`${name} is not serving`);
    },
  };
}

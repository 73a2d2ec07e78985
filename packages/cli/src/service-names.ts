import { join } from 'node:path';

/** The four Docket services, in start order: state first, it serves the others. */
export const SERVICE_NAMES = ['state', 'admission', 'execution', 'events'] as const;

/** One of {@link SERVICE_NAMES}. */
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** The services that call the state service, which start once it listens. */
export const FRONT_SERVICE_NAMES = ['admission', 'execution', 'events'] as const satisfies readonly ServiceName[];

/** Default ports (SPEC section 12). */
export const DEFAULT_SERVICE_PORTS: Readonly<Record<ServiceName, number>> = {
  admission: 7401,
  execution: 7402,
  events: 7403,
  state: 7404,
};

/** `<repoRoot>/services/<name>/dist/main.js`, the built entry point of a service. */
export function serviceEntryPath(repoRoot: string, name: ServiceName): string {
  return join(repoRoot, 'services', name, 'dist', 'main.js');
}

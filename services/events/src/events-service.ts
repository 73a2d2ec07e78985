import type { Environment, Logger, StartedService } from '@docket/service-kit';
import { readEventsConfig } from './config.js';
import { startEventsServer } from './server.js';

/**
 * Starts the events service from its environment. `main.ts` runs it as a
 * process; the in-process test cluster calls it directly.
 */
export async function startEventsService(env: Environment, logger: Logger): Promise<StartedService> {
  const config = readEventsConfig(env);
  return { server: await startEventsServer(config, logger), graceMs: config.shutdownGraceMs };
}

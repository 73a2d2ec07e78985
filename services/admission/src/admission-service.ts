import type { Environment, Logger, StartedService } from '@docket/service-kit';
import { readAdmissionConfig } from './config.js';
import { startAdmissionServer } from './server.js';

/**
 * Starts the admission service from its environment. `main.ts` runs it as a
 * process; the in-process test cluster calls it directly.
 */
export async function startAdmissionService(env: Environment, logger: Logger): Promise<StartedService> {
  const config = readAdmissionConfig(env);
  return { server: await startAdmissionServer(config, logger), graceMs: config.shutdownGraceMs };
}

import type { Environment, Logger, StartedService } from '@docket/service-kit';
import { readExecutionConfig } from './config.js';
import { startExecutionServer } from './server.js';

/**
 * Starts the execution service from its environment. `main.ts` runs it as a
 * process; the in-process test cluster calls it directly.
 */
export async function startExecutionService(env: Environment, logger: Logger): Promise<StartedService> {
  const config = readExecutionConfig(env);
  return { server: await startExecutionServer(config, logger), graceMs: config.shutdownGraceMs };
}

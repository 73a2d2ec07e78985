import { createLogger, runUntilSignalled } from '@docket/service-kit';
import { readAdmissionConfig } from './config.js';
import { startAdmissionServer } from './server.js';

const logger = createLogger('admission');

async function main(): Promise<void> {
  const config = readAdmissionConfig(process.env);
  const server = await startAdmissionServer(config, logger);
  runUntilSignalled(server, logger, config.shutdownGraceMs);
}

main().catch((error: unknown) => {
  logger.error('failed to start', { error: (error as Error).name, reason: (error as Error).message });
  process.exit(1);
});

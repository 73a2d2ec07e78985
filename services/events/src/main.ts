import { createLogger, runUntilSignalled } from '@docket/service-kit';
import { readEventsConfig } from './config.js';
import { startEventsServer } from './server.js';

const logger = createLogger('events');

async function main(): Promise<void> {
  const config = readEventsConfig(process.env);
  const server = await startEventsServer(config, logger);
  runUntilSignalled(server, logger, config.shutdownGraceMs);
}

main().catch((error: unknown) => {
  logger.error('failed to start', { error: (error as Error).name, reason: (error as Error).message });
  process.exit(1);
});

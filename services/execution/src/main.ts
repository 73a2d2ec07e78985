import { createLogger, runUntilSignalled } from '@docket/service-kit';
import { readExecutionConfig } from './config.js';
import { startExecutionServer } from './server.js';

const logger = createLogger('execution');

async function main(): Promise<void> {
  const config = readExecutionConfig(process.env);
  const server = await startExecutionServer(config, logger);
  runUntilSignalled(server, logger, config.shutdownGraceMs);
}

main().catch((error: unknown) => {
  logger.error('failed to start', { error: (error as Error).name, reason: (error as Error).message });
  process.exit(1);
});

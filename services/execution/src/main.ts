import { readFrontServiceConfig, runService } from '@docket/service-kit';
import { EXECUTION_DEFAULT_PORT, startExecutionServer } from './server.js';

runService('execution', async (logger) => {
  const config = readFrontServiceConfig(process.env, EXECUTION_DEFAULT_PORT);
  return { server: await startExecutionServer(config, logger), graceMs: config.shutdownGraceMs };
});

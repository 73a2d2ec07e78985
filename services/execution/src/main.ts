import { runService } from '@docket/service-kit';
import { readExecutionConfig } from './config.js';
import { startExecutionServer } from './server.js';

runService('execution', async (logger) => {
  const config = readExecutionConfig(process.env);
  return { server: await startExecutionServer(config, logger), graceMs: config.shutdownGraceMs };
});

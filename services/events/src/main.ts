import { runService } from '@docket/service-kit';
import { readEventsConfig } from './config.js';
import { startEventsServer } from './server.js';

runService('events', async (logger) => {
  const config = readEventsConfig(process.env);
  return { server: await startEventsServer(config, logger), graceMs: config.shutdownGraceMs };
});

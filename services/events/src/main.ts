import { readFrontServiceConfig, runService } from '@docket/service-kit';
import { EVENTS_DEFAULT_PORT, startEventsServer } from './server.js';

runService('events', async (logger) => {
  const config = readFrontServiceConfig(process.env, EVENTS_DEFAULT_PORT);
  return { server: await startEventsServer(config, logger), graceMs: config.shutdownGraceMs };
});

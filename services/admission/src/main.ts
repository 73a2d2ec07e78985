import { runService } from '@docket/service-kit';
import { readAdmissionConfig } from './config.js';
import { startAdmissionServer } from './server.js';

runService('admission', async (logger) => {
  const config = readAdmissionConfig(process.env);
  return { server: await startAdmissionServer(config, logger), graceMs: config.shutdownGraceMs };
});

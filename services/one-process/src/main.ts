import { createLogger, readLogLevel, readShutdownGraceMs, runUntilSignalled, startTracing } from '@docket/service-kit';
import { startOneProcess } from './one-process.js';

// As a service's `runService`, for four services: a logger each, tracing
// once, `{msg: "listening", urls}` from `docket` once all four listen,
// drain on SIGTERM/SIGINT, and a failed start logged and exit 1.
const level = readLogLevel(process.env);
const logger = createLogger('docket', undefined, level);
try {
  const graceMs = readShutdownGraceMs(process.env);
  const tracing = startTracing('docket', process.env);
  const docket = await startOneProcess(process.env, (name) => createLogger(name, undefined, level));
  logger.info('all listening', { urls: docket.urls });
  runUntilSignalled({ shutdown: (grace = graceMs) => docket.stop(grace) }, logger, graceMs, () => tracing.shutdown());
} catch (error) {
  logger.error('failed to start', error instanceof Error ? { error: error.name, reason: error.message } : { error: typeof error });
  process.exit(1);
}

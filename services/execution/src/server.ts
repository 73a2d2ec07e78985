import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { batchingStateClient, startFrontServer, stateTransportOf, type Logger, type RunningServer } from '@docket/service-kit';
import type { ExecutionConfig } from './config.js';
import { startBackgroundLoops, type BackgroundLoops } from './domain/background-loops.js';
import { ChangeTicks } from './domain/change-ticks.js';
import { executionServiceRoutes } from './routes/execution-service.js';

/**
 * Starts the execution service: ExecutionService, health and reflection
 * for workers (role `worker` only), the process's one WatchChanges stream
 * that wakes waiting claims, and the background loops (reaper, retry
 * scheduler, idempotency sweeper).
 *
 * The returned server's `shutdown` stops the background loops as soon as
 * it begins (they finish a step in flight, start no other), drains the
 * server (waiting claims answer with no assignments at once), then closes
 * the change stream.
 */
export async function startExecutionServer(config: ExecutionConfig, logger: Logger): Promise<RunningServer> {
  const stateTransport = stateTransportOf(config, 'execution');
  const state = batchingStateClient(stateTransport, config.stateBatch);
  const ticks = new ChangeTicks((signal) => state.watchChanges({}, { signal }), logger);
  ticks.start();
  let loops: BackgroundLoops | undefined;
  const server = await startFrontServer(config, {
    name: 'execution',
    services: [ExecutionService],
    routes: executionServiceRoutes({ state, ticks, recheckMs: config.claimRecheckMs, logger, maxAgeMs: config.workSessionMaxAgeMs }),
    allowedRoles: ['worker'],
    stateTransport,
    logger,
    stopFirst: () => loops?.stop(),
    close: () => ticks.close(),
  });
  loops = config.backgroundLoops ? startBackgroundLoops(state, config, logger) : undefined;
  return server;
}

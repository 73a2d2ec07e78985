import { serviceTokenSource } from '@docket/auth';
import { createClient } from '@connectrpc/connect';
import { ExecutionService } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { batchingStateClient, createServiceTransport, serviceHealthProbe, startServer, type Logger, type RunningServer } from '@docket/service-kit';
import type { ExecutionConfig } from './config.js';
import { startBackgroundLoops } from './domain/background-loops.js';
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
  const stateTransport = createServiceTransport({ baseUrl: config.stateUrl, token: serviceTokenSource(config.serviceAuthSecret, 'execution', { ttlSeconds: config.serviceTokenTtlSeconds }), defaultDeadlineMs: config.stateCallTimeoutMs });
  const state = batchingStateClient(createClient(StateService, stateTransport), config.stateBatch);
  const ticks = new ChangeTicks((signal) => state.watchChanges({}, { signal }), logger);
  ticks.start();
  let server: RunningServer;
  try {
    server = await startServer({
      name: 'execution',
      corsOrigins: config.corsOrigins,
      requestBytes: 'executionRequestBytes',
      listen: config.listen,
      services: [ExecutionService],
      routes: executionServiceRoutes({ state, ticks, recheckMs: config.claimRecheckMs, logger, maxAgeMs: config.workSessionMaxAgeMs }),
      authenticate: { secret: config.authSecret, publicKeys: config.authPublicKeys, rules: config.tokenRules, allowedRoles: ['worker'] },
      logger,
      dependency: serviceHealthProbe('state', stateTransport),
    });
  } catch (error) {
    await ticks.close();
    throw error;
  }
  const loops = config.backgroundLoops ? startBackgroundLoops(state, config, logger) : undefined;

  let stopping: Promise<void> | undefined;
  const stop = async (graceMs?: number): Promise<void> => {
    const loopsStopped = loops?.stop();
    await server.shutdown(graceMs);
    await loopsStopped;
    await ticks.close();
  };
  return {
    url: server.url,
    port: server.port,
    health: server.health,
    metrics: server.metrics,
    callsInFlight: server.callsInFlight,
    shutdown: (graceMs) => (stopping ??= stop(graceMs)),
  };
}

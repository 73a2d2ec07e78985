import { SERVICE_AUDIENCE } from '@docket/auth';
import type { Interceptor } from '@connectrpc/connect';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import { StateService } from '@docket/proto/docket/state/v1/state_service_pb.js';
import { startServer, type Logger, type RunningServer } from '@docket/service-kit';
import type { StateConfig } from './config.js';
import type { ChangeListenerHub } from './db/change-listener.js';
import type { ApprovalHistory } from './db/approval-history.js';
import { translateDatabaseError } from './db/database-errors.js';
import type { Database } from './db/tables/index.js';
import { batchedWrites } from './batched-writes.js';
import type { QuarantineReport } from './journal/job-quarantine.js';
import { stateServiceRoutes } from './routes/state-service.js';
import { createStateMetrics } from './state-metrics.js';
import type { RollbackGuard } from './failover/rollback-guard.js';

/** Maps database failures to typed errors before the shared error mapping. */
const databaseErrors: Interceptor = (next) => async (request) => {
  try {
    return await next(request);
  } catch (error) {
    throw translateDatabaseError(error);
  }
};

/** The one StateService call a replica that found a rollback still answers. */
const ACCEPT_ROLLBACK = StateService.method.acceptRollback;

/**
 * While the rollback guard has tripped, every StateService call but
 * AcceptRollback is refused, UNAVAILABLE with reason DATABASE_ROLLED_BACK,
 * before it reads or writes anything (streams included); health and
 * reflection still answer. Calls already under way are stopped where they
 * take a connection.
 */
function refusingAfterRollback(guard: RollbackGuard): Interceptor {
  return (next) => async (request) => {
    if (request.service.typeName === StateService.typeName && request.method !== ACCEPT_ROLLBACK) guard.assertServing();
    return next(request);
  };
}

/** Starts the state service's server: StateService, health, reflection. */
export function startStateServer(
  config: StateConfig,
  database: { readonly db: Kysely<Database>; readonly pool: pg.Pool },
  changes: ChangeListenerHub,
  approvals: ApprovalHistory,
  rollbackGuard: RollbackGuard,
  logger: Logger,
): Promise<RunningServer> {
  const metrics = createStateMetrics(database.pool, changes);
  // The job id and the failure's class only: never its message, SQL or the job's data.
  const reportQuarantine: QuarantineReport = ({ jobId, task, errorClass }) => {
    logger.warn('job quarantined: it could not be settled and is skipped from now on', { jobId, task, errorClass });
    metrics.countQuarantined(task);
  };
  return startServer({
    name: 'state',
    requestBytes: 'stateRequestBytes',
    metrics: metrics.service,
    listen: config.listen,
    services: [StateService],
    routes: stateServiceRoutes({
      db: database.db,
      pool: database.pool,
      writes: batchedWrites(database.pool, config.batching, { leaseMs: config.leaseMs }, metrics.observeBatch, reportQuarantine),
      metrics,
      changes,
      execution: { leaseMs: config.leaseMs },
      approvals,
      logger,
      reportQuarantine,
      rollbackGuard,
    }),
    authenticate: { secret: config.serviceAuthSecret, allowedRoles: ['service'], rules: { audience: SERVICE_AUDIENCE } },
    logger,
    interceptors: [refusingAfterRollback(rollbackGuard), databaseErrors],
    // The probe reads where the primary is in its history (one statement every 2 s): NOT_SERVING while it is
    // unreachable, in recovery, or has lost writes this replica acknowledged.
    dependency: { name: 'postgres', check: () => rollbackGuard.probe(database.pool) },
  });
}

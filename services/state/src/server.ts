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
import { pingDatabase } from './db/database.js';
import type { Database } from './db/tables/index.js';
import { batchedWrites } from './batched-writes.js';
import type { QuarantineReport } from './journal/job-quarantine.js';
import { stateServiceRoutes } from './routes/state-service.js';
import { createStateMetrics } from './state-metrics.js';

/** Maps database failures to typed errors before the shared error mapping. */
const databaseErrors: Interceptor = (next) => async (request) => {
  try {
    return await next(request);
  } catch (error) {
    throw translateDatabaseError(error);
  }
};

/** Starts the state service's server: StateService, health, reflection. */
export function startStateServer(
  config: StateConfig,
  database: { readonly db: Kysely<Database>; readonly pool: pg.Pool },
  changes: ChangeListenerHub,
  approvals: ApprovalHistory,
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
    }),
    authenticate: { secret: config.serviceAuthSecret, allowedRoles: ['service'], rules: { audience: SERVICE_AUDIENCE } },
    logger,
    interceptors: [databaseErrors],
    dependency: { name: 'postgres', check: () => pingDatabase(database.pool) },
  });
}

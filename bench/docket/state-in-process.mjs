// The worker path's floor: the state service's own worker transactions,
// run in the generator process against the deployment's database with no
// call at all. RegisterWorker, then ClaimJobs and ReportOutcome as the
// state service decides them (parsed by its own parsers, grouped by its
// own `batchedWrites` into the same worker batches, written by the same
// statements), but handed to it as function calls: no gRPC, no HTTP/2, no
// execution service, no protobuf on the wire. Whatever Docket's call path
// costs, a claim + complete cannot cost less than this, so its jobs/s are
// the ceiling of any topology (four processes, one process, replicas) and
// its CPU per job (PostgreSQL and this process) the part the data model
// asks for. One difference, which only flatters it: no rollback guard, so
// a transaction's opening does not read the WAL flush position.
import { randomBytes } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { ClaimJobsRequestSchema, RegisterWorkerRequestSchema, ReportOutcomeRequestSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { batchedWrites } from '../../services/state/dist/batched-writes.js';
import { parseClaim } from '../../services/state/dist/claims/claim-jobs.js';
import { readStateConfig } from '../../services/state/dist/config.js';
import { openDatabase } from '../../services/state/dist/db/database.js';
import { parseAttemptReport } from '../../services/state/dist/worker-calls/attempt-reports.js';
import { registerWorker } from '../../services/state/dist/workers/register-worker.js';

const quiet = { debug() {}, info() {}, warn() {}, error: (message) => console.error(message) };

/**
 * Opens the state service's worker path on `databaseUrl` (already migrated
 * by the deployment's state service) for the worker subject `subject`:
 * `{registerWorker(request), claimJobs(request), reportOutcome(request), close()}`,
 * taking and answering the public messages' init shapes as the RPCs do;
 * `onBatch(path, size)` hears of every worker transaction's claims and
 * reports (the state service's batch metric).
 */
export async function openStateInProcess(databaseUrl, subject, onBatch = () => {}) {
  // The state service's defaults for worker batches and leases; the secret it requires is used by nothing here.
  const config = readStateConfig({ DOCKET_SERVICE_AUTH_SECRET: randomBytes(32).toString('base64') });
  const execution = { leaseMs: config.leaseMs };
  const { db, pool } = openDatabase({ connectionString: databaseUrl, logger: quiet });
  const writes = batchedWrites(pool, config.batching, execution, onBatch);
  return {
    registerWorker: (request) => registerWorker(db, execution, subject, create(RegisterWorkerRequestSchema, request)),
    claimJobs: async (request) => (await writes.claim(parseClaim(subject, create(ClaimJobsRequestSchema, request)))).response,
    reportOutcome: (request) => writes.report(parseAttemptReport(subject, { case: 'reportOutcome', value: create(ReportOutcomeRequestSchema, request) })),
    close: () => db.destroy(),
  };
}

// The floor of Docket's data path: the state service's own transactions,
// run in the generator process against the deployment's database with no
// call at all. SubmitJob as the admission service checks and fingerprints
// it and the state service admits it (its admission batches);
// RegisterWorker, then ClaimJobs and ReportOutcome as the state service
// decides them (its parsers, its worker batches, its statements). Each is
// a function call: no gRPC, no HTTP/2, no execution service, no protobuf
// on the wire. Whatever Docket's call path costs, a submission or a claim
// + complete cannot cost less than this, so its jobs/s are the ceiling of
// any topology (four processes, one process, replicas) and its CPU per job
// (PostgreSQL and this process) what the data model asks for. One
// difference only flatters it: there is no rollback guard, so a
// transaction's opening does not read the WAL flush position.
import { randomBytes } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { SubmitJobRequestSchema } from '@docket/proto/docket/admission/v1/admission_service_pb.js';
import { ClaimJobsRequestSchema, RegisterWorkerRequestSchema, ReportOutcomeRequestSchema } from '@docket/proto/docket/execution/v1/execution_service_pb.js';
import { readAdmissionConfig } from '../../services/admission/dist/config.js';
import { admissionOf } from '../../services/admission/dist/domain/admission.js';
import { batchedWrites } from '../../services/state/dist/batched-writes.js';
import { parseClaim } from '../../services/state/dist/claims/claim-jobs.js';
import { readStateConfig } from '../../services/state/dist/config.js';
import { openDatabase } from '../../services/state/dist/db/database.js';
import { parseAdmitJobRequest } from '../../services/state/dist/routes/state-requests.js';
import { parseAttemptReport } from '../../services/state/dist/worker-calls/attempt-reports.js';
import { registerWorker } from '../../services/state/dist/workers/register-worker.js';

/** This process's DOCKET_*_BATCH* variables, which the state service reads (DOCKET_ADMIT_BATCH_MAX, DOCKET_WORKER_BATCHES_IN_FLIGHT, ...). */
const batchSettings = () => Object.fromEntries(Object.entries(process.env).filter(([name]) => /^DOCKET_[A-Z]+_BATCH/.test(name)));

/** A fresh secret, for the settings readers that require one; nothing here signs or checks a token. */
const secret = () => randomBytes(32).toString('base64');

const quiet = { debug() {}, info() {}, warn() {}, error: (message) => console.error(message) };

/**
 * Opens the state service's admissions and worker path on `databaseUrl`
 * (already migrated by the deployment's state service) for the subject
 * `subject`: `{submitJob(request), registerWorker(request), claimJobs(request),
 * reportOutcome(request), close()}`,
 * taking and answering the public messages' init shapes as the RPCs do;
 * `onBatch(path, size)` hears of every worker transaction's claims and
 * reports (the state service's batch metric).
 */
export function openStateInProcess(databaseUrl, subject, onBatch = () => {}) {
  // The state service's batch settings (its defaults, or this process's DOCKET_*_BATCH* variables) and lease, and the admission service's idempotency TTL.
  const config = readStateConfig({ ...batchSettings(), DOCKET_SERVICE_AUTH_SECRET: secret() });
  const admission = { idempotencyTtlMs: readAdmissionConfig({ DOCKET_AUTH_SECRET: secret(), DOCKET_SERVICE_AUTH_SECRET: secret(), DOCKET_CURSOR_SECRET: secret() }).idempotencyTtlMs };
  const execution = { leaseMs: config.leaseMs };
  const { db, pool } = openDatabase({ connectionString: databaseUrl, logger: quiet });
  const writes = batchedWrites(pool, config.batching, execution, onBatch);
  const principal = { subject, role: 'user' };
  return {
    submitJob: async (request) => ({ job: (await writes.admissions.submit(parseAdmitJobRequest(admissionOf(admission, principal, create(SubmitJobRequestSchema, request))))).job }),
    registerWorker: (request) => registerWorker(db, execution, subject, create(RegisterWorkerRequestSchema, request)),
    claimJobs: async (request) => (await writes.claim(parseClaim(subject, create(ClaimJobsRequestSchema, request)))).response,
    reportOutcome: (request) => writes.report(parseAttemptReport(subject, { case: 'reportOutcome', value: create(ReportOutcomeRequestSchema, request) })),
    close: () => db.destroy(),
  };
}

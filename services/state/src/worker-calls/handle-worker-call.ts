import type { SubmitOptions } from '@docket/service-kit';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import { invalidField } from '@docket/contracts';
import {
  HandleWorkerCallResponseSchema,
  type HandleWorkerCallRequest,
  type HandleWorkerCallResponse,
} from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { Database } from '../db/tables/index.js';
import { parseAttemptReport } from './attempt-reports.js';
import type { BatchedWrites } from '../batched-writes.js';
import { parseClaim } from '../claims/claim-jobs.js';
import { listRecoverableEffects } from './list-recoverable-effects.js';
import { registerWorker, type ExecutionSettings } from '../workers/register-worker.js';

/**
 * Dispatches one worker RPC, forwarded by the execution service with the
 * authenticated worker subject: registrations run alone; claims and
 * attempt-scoped reports are checked here and then decided together in the
 * state process's next worker batch (see `BatchedWrites`).
 */
export async function handleWorkerCall(
  db: Kysely<Database>,
  writes: BatchedWrites,
  settings: ExecutionSettings,
  call: HandleWorkerCallRequest,
  deadline: SubmitOptions = {},
): Promise<HandleWorkerCallResponse> {
  if (call.subject.length === 0 || call.subject.length > 256) throw invalidField('subject', 'must be 1 to 256 characters');
  const { subject, request } = call;
  switch (request.case) {
    case 'registerWorker':
      return create(HandleWorkerCallResponseSchema, { response: { case: 'registerWorker', value: await registerWorker(db, settings, subject, request.value) } });
    case 'claimJobs': {
      const claimed = await writes.claim(parseClaim(subject, request.value), deadline);
      return create(HandleWorkerCallResponseSchema, {
        response: { case: 'claimJobs', value: claimed.response },
        nextClaimableAt: claimed.nextClaimableAt ? timestampFromDate(claimed.nextClaimableAt) : undefined,
        claimQueues: [...claimed.claimQueues],
      });
    }
    case 'renewAttempt':
    case 'reportProgress':
    case 'saveCheckpoint':
    case 'appendEvents':
    case 'reportOutcome':
    case 'ackSignals':
    case 'requestApproval':
    case 'beginEffect':
    case 'advanceEffect': {
      const report = parseAttemptReport(subject, request);
      const response = await writes.report(report, deadline);
      return create(HandleWorkerCallResponseSchema, { response: { case: report.case, value: response } as HandleWorkerCallResponse['response'] });
    }
    case 'listRecoverableEffects':
      return create(HandleWorkerCallResponseSchema, {
        response: { case: 'listRecoverableEffects', value: await listRecoverableEffects(db, subject, request.value) },
      });
    default:
      throw invalidField('request', 'must be set');
  }
}

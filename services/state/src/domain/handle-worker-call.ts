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
import { appendEvents, renewAttempt, reportOutcome, reportProgress, saveCheckpoint } from './attempt-reports.js';
import { claimJobs } from './claim-jobs.js';
import { registerWorker, type ExecutionSettings } from './register-worker.js';

/**
 * Dispatches one worker RPC, forwarded by the execution service with the
 * authenticated worker subject, to its domain function, and wraps the
 * public response.
 */
export async function handleWorkerCall(
  db: Kysely<Database>,
  settings: ExecutionSettings,
  call: HandleWorkerCallRequest,
): Promise<HandleWorkerCallResponse> {
  if (call.subject.length === 0 || call.subject.length > 256) throw invalidField('subject', 'must be 1 to 256 characters');
  const { subject, request } = call;
  switch (request.case) {
    case 'registerWorker':
      return create(HandleWorkerCallResponseSchema, { response: { case: 'registerWorker', value: await registerWorker(db, settings, subject, request.value) } });
    case 'claimJobs': {
      const claimed = await claimJobs(db, settings, subject, request.value);
      return create(HandleWorkerCallResponseSchema, {
        response: { case: 'claimJobs', value: claimed.response },
        nextClaimableAt: claimed.nextClaimableAt ? timestampFromDate(claimed.nextClaimableAt) : undefined,
      });
    }
    case 'renewAttempt':
      return create(HandleWorkerCallResponseSchema, { response: { case: 'renewAttempt', value: await renewAttempt(db, settings, subject, request.value) } });
    case 'reportProgress':
      return create(HandleWorkerCallResponseSchema, { response: { case: 'reportProgress', value: await reportProgress(db, subject, request.value) } });
    case 'saveCheckpoint':
      return create(HandleWorkerCallResponseSchema, { response: { case: 'saveCheckpoint', value: await saveCheckpoint(db, subject, request.value) } });
    case 'appendEvents':
      return create(HandleWorkerCallResponseSchema, { response: { case: 'appendEvents', value: await appendEvents(db, subject, request.value) } });
    case 'reportOutcome':
      return create(HandleWorkerCallResponseSchema, { response: { case: 'reportOutcome', value: await reportOutcome(db, subject, request.value) } });
    default:
      throw invalidField('request', 'must be set');
  }
}

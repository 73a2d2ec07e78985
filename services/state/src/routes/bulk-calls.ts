import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Kysely } from 'kysely';
import { invalidField } from '@docket/contracts';
import { HandleBulkCallResponseSchema, type HandleBulkCallRequest, type HandleBulkCallResponse } from '@docket/proto/docket/state/v1/state_service_pb.js';
import type { Database } from '../db/tables/index.js';
import { parseBulkFilter, parseBulkOperationId, readBulkOperation, startBulkOperation } from '../owner-calls/bulk-operations.js';
import { adminOf, parseIdempotentRequest } from './state-requests.js';

/**
 * Decides one HandleBulkCall (admins only): RetryJobs and CancelJobs start
 * a bulk operation under SubmitJob's idempotency contract, the filter
 * checked before anything is written; GetBulkOperation reads one.
 */
export async function answerBulkCall(db: Kysely<Database>, request: HandleBulkCallRequest): Promise<HandleBulkCallResponse> {
  adminOf(request.caller);
  const call = request.request;
  switch (call.case) {
    case 'retryJobs':
    case 'cancelJobs': {
      const action = call.case === 'retryJobs' ? 'RETRY' : 'CANCEL';
      const filter = parseBulkFilter(action, call.value.filter);
      const outcome = await startBulkOperation(db, parseIdempotentRequest(request), action, filter);
      const value = { operation: outcome.value, replayed: outcome.replayed, idempotencyExpiresAt: timestampFromDate(outcome.idempotencyExpiresAt) };
      return create(HandleBulkCallResponseSchema, { response: call.case === 'retryJobs' ? { case: 'retryJobs', value } : { case: 'cancelJobs', value } });
    }
    case 'getBulkOperation': {
      const operation = await readBulkOperation(db, parseBulkOperationId(call.value.operationId));
      return create(HandleBulkCallResponseSchema, { response: { case: 'getBulkOperation', value: { operation } } });
    }
    default:
      throw invalidField('request', 'must be set');
  }
}

import { fromBinary, toJson, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { DocketError, computeRequestDigest, invalidField, isValidId, type JsonValue } from '@docket/contracts';
import type { WorkerOperationRow } from '../db/queries/worker-operations.js';

/** How long worker operation records are kept for replay. */
export const WORKER_OPERATION_TTL_MS = 24 * 3_600_000;

/**
 * The digest an operation id is bound to: the request with its operation
 * id cleared, under the RPC's name and the incarnation. Also checks the
 * operation id's shape (INVALID_FIELD), before anything is read.
 */
export function operationDigest<Req extends DescMessage>(
  rpc: string,
  incarnation: string,
  requestSchema: Req,
  request: MessageShape<Req> & { operationId: string },
): string {
  if (!isValidId(request.operationId)) {
    throw invalidField('operation_id', 'must be 8 to 128 characters of [A-Za-z0-9_-], starting with a letter or digit');
  }
  const withoutId = { ...request, operationId: '' } as MessageShape<Req>;
  return computeRequestDigest({ operation: rpc, subject: incarnation, request: toJson(requestSchema, withoutId) as JsonValue });
}

/**
 * The first response recorded for an operation id, answered before any
 * authority check (the first call may have committed and lost its reply):
 * the same payload replays, another payload (or another RPC) is
 * OPERATION_MISMATCH.
 */
export function replayOperation<Res extends DescMessage>(
  recorded: Pick<WorkerOperationRow, 'rpc' | 'request_digest' | 'response'>,
  rpc: string,
  digest: string,
  responseSchema: Res,
): MessageShape<Res> {
  if (recorded.rpc !== rpc || recorded.request_digest !== digest) {
    throw new DocketError('OPERATION_MISMATCH', 'the operation id was already used with a different request');
  }
  return fromBinary(responseSchema, recorded.response);
}

/** UNAVAILABLE: the same operation id committed concurrently; retrying it replays that answer. */
export function concurrentOperation(): DocketError {
  return new DocketError('UNAVAILABLE', 'the same operation id is being processed concurrently, retry it');
}

import { fromBinary, toBinary, toJson, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { DocketError, computeRequestDigest, invalidField, isValidId, type JsonValue } from '@docket/contracts';
import type { Queryable } from '../db/database.js';
import { findWorkerOperation, recordWorkerOperation } from '../db/queries/worker-operations.js';

/** How long worker operation records are kept for replay. */
export const WORKER_OPERATION_TTL_MS = 24 * 3_600_000;

/** One worker call made idempotent by its operation id. */
export interface WorkerOperation<Req extends DescMessage, Res extends DescMessage> {
  readonly incarnation: string;
  readonly operationId: string;
  /** The RPC's name; an operation id used for another RPC is a mismatch. */
  readonly rpc: string;
  readonly requestSchema: Req;
  readonly request: MessageShape<Req> & { operationId: string };
  readonly responseSchema: Res;
}

/**
 * Answers a replayed operation id with its first response, before any
 * authority check (the first call may have committed and lost its reply):
 * the same payload replays, another payload (or another RPC) is
 * OPERATION_MISMATCH. Otherwise runs `perform` and records its response in
 * the caller's transaction, so the effect and the record commit together.
 * `recordEmpty` false leaves responses that did nothing (an empty claim)
 * unrecorded, so a retry of them tries again.
 */
export async function runWorkerOperation<Req extends DescMessage, Res extends DescMessage>(
  tx: Queryable,
  operation: WorkerOperation<Req, Res>,
  now: Date,
  perform: () => Promise<MessageShape<Res>>,
  shouldRecord: (response: MessageShape<Res>) => boolean = () => true,
): Promise<MessageShape<Res>> {
  if (!isValidId(operation.operationId)) {
    throw invalidField('operation_id', 'must be 8 to 128 characters of [A-Za-z0-9_-], starting with a letter or digit');
  }
  const digest = operationDigest(operation);
  const recorded = await findWorkerOperation(tx, operation.incarnation, operation.operationId);
  if (recorded) {
    if (recorded.rpc !== operation.rpc || recorded.request_digest !== digest) throw mismatch();
    return fromBinary(operation.responseSchema, recorded.response);
  }
  const response = await perform();
  if (shouldRecord(response)) {
    const inserted = await recordWorkerOperation(tx, {
      worker_incarnation: operation.incarnation,
      operation_id: operation.operationId,
      rpc: operation.rpc,
      request_digest: digest,
      response: Buffer.from(toBinary(operation.responseSchema, response)),
      created_at: now,
      expires_at: new Date(now.getTime() + WORKER_OPERATION_TTL_MS),
    });
    if (!inserted) {
      throw new DocketError('UNAVAILABLE', 'the same operation id is being processed concurrently, retry it');
    }
  }
  return response;
}

function operationDigest<Req extends DescMessage, Res extends DescMessage>(operation: WorkerOperation<Req, Res>): string {
  const request = { ...operation.request, operationId: '' } as MessageShape<Req>;
  return computeRequestDigest({
    operation: operation.rpc,
    subject: operation.incarnation,
    request: toJson(operation.requestSchema, request) as JsonValue,
  });
}

function mismatch(): DocketError {
  return new DocketError('OPERATION_MISMATCH', 'the operation id was already used with a different request');
}

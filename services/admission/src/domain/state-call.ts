import type { DescMessage, MessageShape } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import type { Principal } from '@docket/auth';
import { DocketError } from '@docket/contracts';
import { callerOf } from '@docket/service-kit';
import type { AdmissionDependencies } from './admission.js';
import { fingerprintRequest } from './request-fingerprint.js';

/** A public RPC the state service decides under SubmitJob's idempotency contract: its request schema and path. */
export interface IdempotentRpc {
  readonly schema: DescMessage;
  /** The RPC path without its leading slash: part of the key's scope. */
  readonly operation: string;
}

/**
 * The binding fields of an idempotent call the state service decides (owner
 * calls, schedule and bulk mutations): the caller, the RPC path, the key,
 * the request's digest computed exactly as SubmitJob's, and how long the
 * binding is kept.
 */
export function idempotentBinding(deps: AdmissionDependencies, principal: Principal, rpc: IdempotentRpc, request: { readonly idempotencyKey: string }) {
  return {
    caller: callerOf(principal),
    operation: rpc.operation,
    idempotencyKey: request.idempotencyKey,
    requestDigest: fingerprintRequest(rpc.schema, request as MessageShape<DescMessage> & { idempotencyKey: string }, rpc.operation, principal.subject),
    idempotencyTtl: durationFromMs(deps.idempotencyTtlMs),
  };
}

/** The value of a state answer's oneof when it is the call `name` made; another one would be a state bug: INTERNAL, failing closed. */
export function answerOfCase<R extends { readonly case: string | undefined; readonly value?: unknown }, C extends NonNullable<R['case']>>(
  response: R,
  name: C,
): Extract<R, { case: C }>['value'] {
  if (response.case !== name) throw new DocketError('INTERNAL', 'the state service answered another call');
  return response.value as Extract<R, { case: C }>['value'];
}

import type { DescMessage, MessageShape } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import type { Principal } from '@docket/auth';
import { DocketError, parseIdempotencyKey } from '@docket/contracts';
import { callerOf, type ForwardedDeadline } from '@docket/service-kit';
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

/** The binding fields {@link idempotentBinding} gives a call. */
export type IdempotentBinding = ReturnType<typeof idempotentBinding>;

/** A call of a state RPC's `request` oneof that carries an idempotency key. */
type KeyedCall = { readonly case: string; readonly value: { readonly idempotencyKey: string } };

/** A state answer's `response` oneof. */
type StateAnswer = { readonly case: string | undefined; readonly value?: unknown };

/** How the admission service forwards the keyed calls of one state RPC: see {@link idempotentCalls}. */
export interface IdempotentCallSpec<Q extends KeyedCall, A extends StateAnswer> {
  /** The request schema and RPC path of each call (the idempotency scope). */
  readonly rpcs: { readonly [C in Q['case']]: IdempotentRpc };
  /** Refuses a caller before anything is read (an admin-only RPC's `requireAdmin`). */
  readonly authorize?: (principal: Principal) => void;
  /** Checks the request beyond its key, which is checked before it. */
  readonly check?: (call: Q) => void;
  /** The state RPC that decides the calls (HandleOwnerCall, HandleScheduleCall, HandleBulkCall). */
  readonly send: (deps: AdmissionDependencies, request: IdempotentBinding & { readonly request: Q }, call: ForwardedDeadline) => Promise<{ readonly response: A }>;
}

/** A forwarder made by {@link idempotentCalls}: call `name` with its public request; resolves to its public response. */
export type IdempotentForwarder<Q extends KeyedCall, A extends StateAnswer> = <C extends Q['case']>(
  deps: AdmissionDependencies,
  principal: Principal,
  name: C,
  request: Extract<Q, { case: C }>['value'],
  call: ForwardedDeadline,
) => Promise<Extract<A, { case: C }>['value']>;

/**
 * The one way the admission service forwards a call the state service
 * decides under SubmitJob's idempotency contract (owner calls, schedule and
 * bulk mutations): `authorize`, then the key (`parseIdempotencyKey`), then
 * `check`; the call goes out with its {@link idempotentBinding}, and the
 * state service decides it in one transaction with the binding and the
 * stored response. The answer must be the same call's ({@link answerOfCase}).
 */
export function idempotentCalls<Q extends KeyedCall, A extends StateAnswer>(calls: IdempotentCallSpec<Q, A>): IdempotentForwarder<Q, A> {
  return async (deps, principal, name, request, call) => {
    calls.authorize?.(principal);
    parseIdempotencyKey(request.idempotencyKey);
    const keyed = { case: name, value: request } as Extract<Q, { case: typeof name }>;
    calls.check?.(keyed);
    const rpc: IdempotentRpc = calls.rpcs[name];
    const answer = await calls.send(deps, { ...idempotentBinding(deps, principal, rpc, request), request: keyed }, call);
    return answerOfCase(answer.response, name as NonNullable<A['case']>) as Extract<A, { case: typeof name }>['value'];
  };
}

import { create } from '@bufbuild/protobuf';
import type { Principal } from '@docket/auth';
import { CallerSchema, type Caller } from '@docket/proto/docket/state/v1/state_service_pb.js';

/**
 * The state service's view of an authenticated caller: its subject, and
 * whether it sees every job (role `admin`). The state service enforces
 * ownership with it, so another user's job answers exactly like a missing
 * one.
 */
export function callerOf(principal: Principal): Caller {
  return create(CallerSchema, { subject: principal.subject, admin: principal.role === 'admin' });
}

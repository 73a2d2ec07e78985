import { create } from '@bufbuild/protobuf';
import type { Principal } from '@docket/auth';
import { CallerSchema, type Caller } from '@docket/proto/docket/state/v1/state_service_pb.js';

/**
 * The state service's view of the authenticated caller: its subject, and
 * whether it sees every job. State enforces ownership with it, so a job of
 * another user answers exactly like a missing one.
 */
export function callerOf(principal: Principal): Caller {
  return create(CallerSchema, { subject: principal.subject, admin: principal.role === 'admin' });
}

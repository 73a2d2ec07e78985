import type { Interceptor } from '@connectrpc/connect';
import { createBearerVerifier, type Role } from '@docket/auth';
import { principalKey } from './principal.js';
import { permissionDeniedError, unauthenticatedError } from './refusals.js';

/** Who may call the Docket services of one server. */
export interface AuthPolicy {
  /** The HS256 secret bearer tokens are verified with (`DOCKET_AUTH_SECRET`). */
  readonly secret: string;
  /** Roles allowed to call; e.g. `['service']` for the state service. */
  readonly allowedRoles: readonly Role[];
}

/**
 * Verifies `authorization: Bearer <JWT>` on every RPC of a service not in
 * `unauthenticatedServices` and stores the caller under
 * {@link principalKey}. A missing, malformed, forged or expired token is
 * `UNAUTHENTICATED` "unauthenticated"; a valid token whose role the policy
 * does not allow is `PERMISSION_DENIED` "permission denied". Neither says
 * why or hints at what exists, and both are decided before the handler (or
 * the router's unimplemented stub) runs. Verified tokens are remembered for
 * up to a minute within their `exp` (`createBearerVerifier`), so a caller
 * reusing its token costs one HMAC a minute, not one per call.
 *
 * @param unauthenticatedServices fully-qualified service names served
 *   without authentication (health and reflection)
 */
export function authenticationInterceptor(
  policy: AuthPolicy,
  unauthenticatedServices: ReadonlySet<string>,
): Interceptor {
  const bearer = createBearerVerifier(policy.secret);
  return (next) => async (req) => {
    if (unauthenticatedServices.has(req.service.typeName)) return next(req);
    const verdict = await bearer.verify(req.header.get('authorization'));
    if (!verdict.ok) throw unauthenticatedError();
    if (!policy.allowedRoles.includes(verdict.principal.role)) throw permissionDeniedError();
    req.contextValues.set(principalKey, verdict.principal);
    return next(req);
  };
}

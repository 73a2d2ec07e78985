import { createContextKey, type HandlerContext } from '@connectrpc/connect';
import type { Principal } from '@docket/auth';
import { unauthenticatedError } from './refusals.js';

/**
 * Context key under which the authentication interceptor stores the caller
 * of a Docket RPC. Undefined for health and reflection, which are served
 * without authentication.
 */
export const principalKey = createContextKey<Principal | undefined>(undefined, {
  description: 'docket principal',
});

/**
 * The authenticated caller of the current RPC. Throws `UNAUTHENTICATED` when
 * there is none, which only happens if a handler was registered outside the
 * authenticated router, so a mistake fails closed.
 */
export function principalOf(ctx: HandlerContext): Principal {
  const principal = ctx.values.get(principalKey);
  if (!principal) throw unauthenticatedError();
  return principal;
}

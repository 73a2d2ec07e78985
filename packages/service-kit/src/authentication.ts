import type { Interceptor } from '@connectrpc/connect';
import { createBearerVerifier, type PublicKeySet, type Role, type TokenRules } from '@docket/auth';
import { principalKey } from './principal.js';
import { permissionDeniedError, unauthenticatedError } from './refusals.js';
import { guardedSink, streamSinkKey } from './stream-sink.js';

/** Who may call the Docket services of one server. At least one of `secret` and `publicKeys` is required. */
export interface AuthPolicy {
  /** The HS256 secret bearer tokens are verified with (`DOCKET_AUTH_SECRET`; state: `DOCKET_SERVICE_AUTH_SECRET`). */
  readonly secret?: string | undefined;
  /** An external issuer's public keys, for EdDSA and RS256 tokens (`DOCKET_AUTH_JWKS_FILE`; never on state). */
  readonly publicKeys?: PublicKeySet | undefined;
  /** Roles allowed to call; e.g. `['service']` for the state service. */
  readonly allowedRoles: readonly Role[];
  /** `aud`, `iss` and clock skew the tokens must satisfy (`exp` is always required). */
  readonly rules?: TokenRules;
}

/**
 * Verifies `authorization: Bearer <JWT>` on every RPC of a service not in
 * `unauthenticatedServices` and stores the caller under
 * {@link principalKey}. A missing, malformed, forged or expired token, one
 * without `exp`, or one that fails the policy's rules, is
 * `UNAUTHENTICATED` "unauthenticated"; a valid token whose role the policy
 * does not allow is `PERMISSION_DENIED` "permission denied". Neither says
 * why or hints at what exists, and both are decided before the handler (or
 * the router's unimplemented stub) runs. Verified tokens are remembered for
 * up to a minute within their `exp` (`createBearerVerifier`), so a caller
 * reusing its token costs one HMAC (or signature check, for an EdDSA or
 * RS256 token from the policy's public keys) a minute, not one per call.
 *
 * A response stream lives no longer than the token that opened it: when
 * its `exp` passes, the stream ends with UNAUTHENTICATED, and the client
 * reconnects with a fresh token (resuming where it was). Messages offered
 * through the stream's sink (`StreamSink`) are refused from then on too.
 *
 * @param unauthenticatedServices fully-qualified service names served
 *   without authentication (health and reflection)
 */
export function authenticationInterceptor(
  policy: AuthPolicy,
  unauthenticatedServices: ReadonlySet<string>,
): Interceptor {
  const { secret, publicKeys } = policy;
  const keys =
    secret !== undefined ? { secret, ...(publicKeys === undefined ? {} : { publicKeys }) } : publicKeys !== undefined ? { publicKeys } : undefined;
  if (keys === undefined) throw new Error('an AuthPolicy needs a secret, public keys or both');
  const bearer = createBearerVerifier(keys, policy.rules);
  return (next) => async (req) => {
    if (unauthenticatedServices.has(req.service.typeName)) return next(req);
    const verdict = await bearer.verify(req.header.get('authorization'));
    if (!verdict.ok) throw unauthenticatedError();
    if (!policy.allowedRoles.includes(verdict.principal.role)) throw permissionDeniedError();
    req.contextValues.set(principalKey, verdict.principal);
    const sink = req.contextValues.get(streamSinkKey);
    if (sink) req.contextValues.set(streamSinkKey, guardedSink(sink, () => Date.now() < verdict.expiresAtMs));
    const response = await next(req);
    if (!response.stream) return response;
    return { ...response, message: untilExpiry(response.message, verdict.expiresAtMs) };
  };
}

/** The longest a timer can wait; an expiry further away is armed again when that much has passed. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * `source`, ended with UNAUTHENTICATED once `expiresAtMs` (epoch ms) has
 * passed: a pull still waiting then is answered with the refusal, a later
 * pull is refused at once, and the source is closed. One timer per stream
 * (armed at the first pull, released when the stream ends), not one per
 * pull: a stream of a busy job pulls thousands of times.
 */
function untilExpiry<T>(source: AsyncIterable<T>, expiresAtMs: number): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<T> {
      const it = source[Symbol.asyncIterator]();
      let timer: NodeJS.Timeout | undefined;
      let ended = false;
      let refusePending: ((error: unknown) => void) | undefined;
      const end = (): void => {
        ended = true;
        clearTimeout(timer);
      };
      const expire = (): void => {
        const remainingMs = expiresAtMs - Date.now();
        if (remainingMs > 0) {
          timer = setTimeout(expire, Math.min(remainingMs, MAX_TIMER_MS)).unref();
          return;
        }
        end();
        it.return?.().catch(() => {});
        refusePending?.(unauthenticatedError());
      };
      return {
        next(): Promise<IteratorResult<T>> {
          if (ended || expiresAtMs <= Date.now()) {
            if (!ended) expire();
            return Promise.reject(unauthenticatedError());
          }
          if (timer === undefined) expire();
          return new Promise<IteratorResult<T>>((resolve, reject) => {
            refusePending = reject;
            it.next().then(
              (result) => {
                refusePending = undefined;
                if (result.done === true) end();
                resolve(result);
              },
              (error: unknown) => {
                refusePending = undefined;
                end();
                reject(error);
              },
            );
          });
        },
        async return(value?: unknown): Promise<IteratorResult<T>> {
          end();
          return (await it.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    },
  };
}

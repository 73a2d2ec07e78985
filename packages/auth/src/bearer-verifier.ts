import { bearerTokenOf, verifyToken, type BearerVerdict, type TokenKeys, type TokenRules } from './tokens.js';
import { VerifiedTokenCache } from './verified-token-cache.js';

/** Tuning of {@link createBearerVerifier}; the defaults suit a service. */
export interface BearerVerifierOptions extends TokenRules {
  /** Most verified tokens remembered (default 10,000). */
  readonly capacity?: number;
  /** Longest one verification is trusted, within the token's `exp` (default 60 s). */
  readonly maxAgeMs?: number;
  /** Epoch milliseconds now; tests substitute it. */
  readonly clock?: () => number;
}

/** Verifies bearer tokens against one set of keys and one set of rules; see {@link createBearerVerifier}. */
export interface BearerVerifier {
  verify(authorization: string | null | undefined): Promise<BearerVerdict>;
}

/** How many verified tokens a verifier remembers by default. */
export const DEFAULT_VERIFIED_TOKEN_CAPACITY = 10_000;

/** How long a verifier trusts one verification by default. */
export const DEFAULT_VERIFIED_TOKEN_MAX_AGE_MS = 60_000;

/**
 * A bearer verifier for one set of {@link TokenKeys} (an HS256 secret, an
 * issuer's public keys, or both) and the {@link TokenRules} in `options`
 * that gives the same verdicts as `verifyBearer(authorization, keys, rules)`
 * but remembers the tokens it accepted (a {@link VerifiedTokenCache}): a
 * token seen again within `maxAgeMs` and before its `exp` is accepted
 * without another HMAC or signature check, whichever kind signed it. A
 * refused token is never remembered, an expired one is refused even if it
 * was accepted a moment before, and a token is re-verified at least every
 * `maxAgeMs`. Rotating the secret or the key set means a new verifier
 * (services read both at start-up), which remembers nothing from the old one.
 */
export function createBearerVerifier(keys: TokenKeys, options: BearerVerifierOptions = {}): BearerVerifier {
  const clock = options.clock ?? Date.now;
  const verified = new VerifiedTokenCache({
    capacity: options.capacity ?? DEFAULT_VERIFIED_TOKEN_CAPACITY,
    maxAgeMs: options.maxAgeMs ?? DEFAULT_VERIFIED_TOKEN_MAX_AGE_MS,
  });
  return {
    async verify(authorization) {
      const bearer = bearerTokenOf(authorization);
      if (!bearer.ok) return bearer;
      const nowMs = clock();
      const remembered = verified.get(bearer.token, nowMs);
      if (remembered) return { ok: true, ...remembered };
      const verdict = await verifyToken(bearer.token, keys, new Date(nowMs), options);
      if (verdict.ok) verified.remember(bearer.token, { principal: verdict.principal, expiresAtMs: verdict.expiresAtMs }, nowMs);
      return verdict;
    },
  };
}

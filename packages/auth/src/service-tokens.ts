import { mintToken } from './tokens.js';

/** The `aud` of every internal token: only the state service accepts it. */
export const SERVICE_AUDIENCE = 'docket-state';

/** How long a service token lives by default: minutes, not days. */
export const SERVICE_TOKEN_TTL_SECONDS = 300;

/** Options of {@link serviceTokenSource}. */
export interface ServiceTokenOptions {
  /** Lifetime of each token (default {@link SERVICE_TOKEN_TTL_SECONDS}). */
  readonly ttlSeconds?: number;
  /** Epoch milliseconds now; tests substitute it. */
  readonly clock?: () => number;
}

/**
 * The credential a front service presents to the state service: short-lived
 * HS256 tokens with role `service`, `sub` the calling service's name and
 * `aud` {@link SERVICE_AUDIENCE}, signed with `DOCKET_SERVICE_AUTH_SECRET`,
 * which the public token issuer never holds. Each token is reused until
 * half its life has passed, then a fresh one is minted, so a call never
 * leaves with a token about to expire and a stolen one is worth minutes.
 *
 * @returns a function giving the token to send now
 */
export function serviceTokenSource(secret: string, subject: string, options: ServiceTokenOptions = {}): () => Promise<string> {
  const ttlSeconds = options.ttlSeconds ?? SERVICE_TOKEN_TTL_SECONDS;
  const clock = options.clock ?? Date.now;
  let current: { token: Promise<string>; renewAtMs: number } | undefined;
  return () => {
    const nowMs = clock();
    if (current === undefined || nowMs >= current.renewAtMs) {
      const token = mintToken({ secret, subject, role: 'service', ttlSeconds, audience: SERVICE_AUDIENCE });
      current = { token, renewAtMs: nowMs + (ttlSeconds * 1000) / 2 };
      // A failed mint is not kept: the next call tries again.
      token.catch(() => {
        if (current?.token === token) current = undefined;
      });
    }
    return current.token;
  };
}

import type { Principal } from './roles.js';

/** A caller whose token verified, and when that token expires. */
export interface VerifiedCaller {
  readonly principal: Principal;
  /** The token's `exp`, epoch milliseconds. */
  readonly expiresAtMs: number;
}

/** Bounds of a {@link VerifiedTokenCache}. */
export interface VerifiedTokenCacheOptions {
  /** Most tokens kept; beyond it the one verified longest ago is dropped. */
  readonly capacity: number;
  /** Longest a verification is trusted, whatever the token's own `exp`. */
  readonly maxAgeMs: number;
}

interface Entry {
  readonly caller: VerifiedCaller;
  /** Epoch milliseconds from which the entry no longer answers. */
  readonly validUntilMs: number;
}

/**
 * Tokens that passed verification, so a caller presenting the same bearer
 * token on every call pays for the HMAC once per `maxAgeMs` instead of per
 * call. Only successes are remembered (a refused token is verified again
 * each time, so garbage cannot fill the cache). An entry answers until the
 * earlier of the token's `exp` and `maxAgeMs` after its verification, and
 * never at or after that instant: the cache cannot accept a token that
 * verification would refuse as expired, and a token is trusted on the
 * strength of one verification for at most `maxAgeMs`. The cache belongs
 * to one secret; a verifier with another secret has its own.
 *
 * Eviction drops the entry verified longest ago, which is also the one
 * nearest to its `maxAgeMs`: a token in use is simply verified again.
 */
export class VerifiedTokenCache {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly options: VerifiedTokenCacheOptions) {}

  /** How many tokens are kept, expired ones not yet dropped included. */
  get size(): number {
    return this.entries.size;
  }

  /** The caller of a token verified earlier and still valid at `nowMs`. */
  get(token: string, nowMs: number): VerifiedCaller | undefined {
    const entry = this.entries.get(token);
    if (entry === undefined) return undefined;
    if (nowMs < entry.validUntilMs) return entry.caller;
    this.entries.delete(token);
    return undefined;
  }

  /**
   * Remembers a token that verification accepted at `verifiedAtMs`; it
   * answers until its `exp` or `maxAgeMs` later, whichever comes first.
   */
  remember(token: string, caller: VerifiedCaller, verifiedAtMs: number): void {
    const validUntilMs = Math.min(verifiedAtMs + this.options.maxAgeMs, caller.expiresAtMs);
    if (this.options.capacity < 1 || !(verifiedAtMs < validUntilMs)) return;
    this.entries.delete(token);
    if (this.entries.size >= this.options.capacity) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
    this.entries.set(token, { caller, validUntilMs });
  }
}

import { SignJWT, errors as joseErrors, jwtVerify, type JWTHeaderParameters, type FlattenedJWSInput } from 'jose';
import { hmacKey } from './hmac-key.js';
import { PUBLIC_KEY_ALGORITHMS, type PublicKeySet } from './public-key-set.js';
import { isRole, type Principal, type Role } from './roles.js';

/** The algorithm of tokens signed with a shared secret, the only one {@link mintToken} signs with. */
const ALGORITHM = 'HS256';

/** The clock skew tolerated by default when judging `exp`, `nbf` and `iat`. */
export const DEFAULT_CLOCK_TOLERANCE_SECONDS = 30;

/** Most queues one worker token may grant. */
export const MAX_GRANTED_QUEUES = 100;

/** Options for {@link mintToken}. */
export interface MintTokenOptions {
  /** The HS256 shared secret (`DOCKET_AUTH_SECRET`, or `DOCKET_SERVICE_AUTH_SECRET` for role `service`). */
  readonly secret: string;
  readonly subject: string;
  readonly role: Role;
  /** Lifetime in seconds: every token expires. */
  readonly ttlSeconds: number;
  /** `aud`, for verifiers that require one. */
  readonly audience?: string;
  /** `iss`, for verifiers that require one. */
  readonly issuer?: string;
  /** For a worker: the only queues it may serve (claim `queues`); absent means any. */
  readonly queues?: readonly string[];
}

/**
 * Mints an HS256 bearer JWT with claims `sub`, `role`, `iat` and `exp` (and `aud`, `iss`, `queues` when given).
 * Docket never mints EdDSA or RS256 tokens: those come from an external
 * issuer whose public keys a verifier is given ({@link TokenKeys}).
 */
export async function mintToken(options: MintTokenOptions): Promise<string> {
  const claims: Record<string, unknown> = { role: options.role };
  if (options.queues !== undefined) claims['queues'] = [...options.queues];
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
    .setSubject(options.subject)
    .setIssuedAt()
    .setExpirationTime(`${options.ttlSeconds}s`);
  if (options.audience !== undefined) jwt.setAudience(options.audience);
  if (options.issuer !== undefined) jwt.setIssuer(options.issuer);
  return jwt.sign(await hmacKey(options.secret));
}

/**
 * What a verifier demands of a token beyond its signature, `exp` (always
 * required), a `sub` and a known `role`.
 */
export interface TokenRules {
  /** When set, `aud` must name it. */
  readonly audience?: string;
  /** When set, `iss` must equal it. */
  readonly issuer?: string;
  /** Skew allowed on `exp`, `nbf` and `iat` (default {@link DEFAULT_CLOCK_TOLERANCE_SECONDS}). */
  readonly clockToleranceSeconds?: number;
}

/**
 * What a verifier checks signatures with: the HS256 shared `secret`, the
 * `publicKeys` of an external issuer (EdDSA and RS256 tokens, selected by
 * `kid`), or both. A token is checked only against the kind its `alg`
 * names: HS256 only with the secret, EdDSA and RS256 only with the public
 * keys, anything else (`none` included) never. A bare string is a secret.
 * At least one must be given.
 */
export type TokenKeys =
  | string
  | { readonly secret: string; readonly publicKeys?: PublicKeySet }
  | { readonly secret?: string; readonly publicKeys: PublicKeySet };

/**
 * Why a token was refused. Deliberately coarse: callers turn any of these
 * into a bare UNAUTHENTICATED that hints at nothing.
 */
export type TokenRefusal = 'missing' | 'malformed' | 'invalid' | 'expired';

/** The outcome of {@link verifyBearer}: the caller and the instant its token expires, or why it was refused. */
export type BearerVerdict =
  | { readonly ok: true; readonly principal: Principal; readonly expiresAtMs: number }
  | { readonly ok: false; readonly refusal: TokenRefusal };

/**
 * Verifies an `authorization` header value (`Bearer <JWT>`) against
 * `keys` and `rules` ({@link verifyToken}). Every call verifies
 * afresh; a server verifying the same tokens over and over uses
 * `createBearerVerifier`, which remembers them.
 */
export async function verifyBearer(
  authorization: string | null | undefined,
  keys: TokenKeys,
  rules: TokenRules = {},
): Promise<BearerVerdict> {
  const token = bearerTokenOf(authorization);
  if (!token.ok) return token;
  return verifyToken(token.token, keys, new Date(), rules);
}

/** The JWT of a `Bearer <JWT>` header value, or why there is none. Internal. */
export function bearerTokenOf(
  authorization: string | null | undefined,
): { readonly ok: true; readonly token: string } | { readonly ok: false; readonly refusal: 'missing' | 'malformed' } {
  if (!authorization) return { ok: false, refusal: 'missing' };
  const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(authorization);
  if (!match?.[1]) return { ok: false, refusal: 'malformed' };
  return { ok: true, token: match[1] };
}

/**
 * Verifies a compact JWT as of `now`: its signature with `keys` (an HS256
 * token with the secret's key; an EdDSA or RS256 token with the public key
 * its `kid` names, of the type its `alg` demands; no other algorithm,
 * `none` included), `exp` present and not passed,
 * `nbf` reached and `iat` not in the future (each within the clock
 * tolerance), `aud` and `iss` as `rules` demand, a `sub` of 1 to 256
 * characters, a known `role`, and for a worker an optional `queues` grant
 * (1 to {@link MAX_GRANTED_QUEUES} names of 1 to 128 characters). Internal:
 * the one verification both {@link verifyBearer} and the caching verifier
 * run, whichever kind of key signed the token.
 */
export async function verifyToken(token: string, keys: TokenKeys, now: Date, rules: TokenRules = {}): Promise<BearerVerdict> {
  const tolerance = rules.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS;
  try {
    const { secret, publicKeys } = typeof keys === 'string' ? { secret: keys, publicKeys: undefined } : keys;
    const { payload } = await jwtVerify(token, (header, jws) => verificationKey(header, jws, secret, publicKeys), {
      algorithms: [...(secret === undefined ? [] : [ALGORITHM]), ...(publicKeys === undefined ? [] : PUBLIC_KEY_ALGORITHMS)],
      currentDate: now,
      clockTolerance: tolerance,
      requiredClaims: ['exp', 'sub'],
      ...(rules.audience === undefined ? {} : { audience: rules.audience }),
      ...(rules.issuer === undefined ? {} : { issuer: rules.issuer }),
    });
    const { sub: subject, exp, iat } = payload;
    const role = payload['role'];
    if (typeof subject !== 'string' || subject.length === 0 || subject.length > 256 || !isRole(role) || typeof exp !== 'number') {
      return { ok: false, refusal: 'invalid' };
    }
    if (iat !== undefined && iat > now.getTime() / 1000 + tolerance) return { ok: false, refusal: 'invalid' };
    const queues = grantedQueues(payload['queues'], role);
    if (queues === null) return { ok: false, refusal: 'invalid' };
    const principal: Principal = queues === undefined ? { subject, role } : { subject, role, queues };
    return { ok: true, principal, expiresAtMs: exp * 1000 };
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) return { ok: false, refusal: 'expired' };
    return { ok: false, refusal: 'invalid' };
  }
}

/**
 * The key that may have signed a token with this protected header: the
 * secret's for HS256, the `kid`'s public key for EdDSA and RS256 (jose
 * refuses a key whose type does not fit the `alg`). Throws, so the token
 * is refused, for an `alg` whose kind of key is not configured and for a
 * public-key token without a `kid`.
 */
function verificationKey(
  header: JWTHeaderParameters,
  jws: FlattenedJWSInput,
  secret: string | undefined,
  publicKeys: PublicKeySet | undefined,
): ReturnType<PublicKeySet['keyFor']> {
  if (header.alg === ALGORITHM && secret !== undefined) return hmacKey(secret);
  const isPublicKeyAlgorithm = (PUBLIC_KEY_ALGORITHMS as readonly string[]).includes(header.alg);
  if (isPublicKeyAlgorithm && publicKeys !== undefined && typeof header.kid === 'string') return publicKeys.keyFor(header, jws);
  throw new joseErrors.JWSSignatureVerificationFailed();
}

/** A worker's `queues` claim: undefined when absent, null when malformed or on another role. */
function grantedQueues(claim: unknown, role: Role): readonly string[] | undefined | null {
  if (claim === undefined) return undefined;
  if (role !== 'worker' || !Array.isArray(claim) || claim.length === 0 || claim.length > MAX_GRANTED_QUEUES) return null;
  const names = claim as unknown[];
  if (!names.every((name): name is string => typeof name === 'string' && name.length > 0 && name.length <= 128)) return null;
  return Object.freeze([...names]);
}

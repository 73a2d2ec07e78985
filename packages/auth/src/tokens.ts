import { SignJWT, errors as joseErrors, jwtVerify } from 'jose';
import { hmacKey } from './hmac-key.js';
import { isRole, type Principal, type Role } from './roles.js';

const ALGORITHM = 'HS256';

/** Options for {@link mintToken}. */
export interface MintTokenOptions {
  /** The HS256 shared secret (`DOCKET_AUTH_SECRET`). */
  readonly secret: string;
  readonly subject: string;
  readonly role: Role;
  /** Lifetime in seconds; omitted means the token never expires. */
  readonly ttlSeconds?: number;
}

/** Mints an HS256 bearer JWT with claims `sub` and `role`. */
export async function mintToken(options: MintTokenOptions): Promise<string> {
  const jwt = new SignJWT({ role: options.role })
    .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
    .setSubject(options.subject)
    .setIssuedAt();
  if (options.ttlSeconds !== undefined) jwt.setExpirationTime(`${options.ttlSeconds}s`);
  return jwt.sign(await hmacKey(options.secret));
}

/**
 * Why a token was refused. Deliberately coarse: callers turn any of these
 * into a bare UNAUTHENTICATED that hints at nothing.
 */
export type TokenRefusal = 'missing' | 'malformed' | 'invalid' | 'expired';

/** The outcome of {@link verifyBearer}. */
export type BearerVerdict =
  | { readonly ok: true; readonly principal: Principal }
  | { readonly ok: false; readonly refusal: TokenRefusal };

/**
 * Verifies an `authorization` header value (`Bearer <JWT>`) against the
 * HS256 secret: signature, expiry, a non-empty `sub` and a known `role`.
 * Every call verifies afresh; a server verifying the same tokens over and
 * over uses `createBearerVerifier`, which remembers them.
 */
export async function verifyBearer(
  authorization: string | null | undefined,
  secret: string,
): Promise<BearerVerdict> {
  const token = bearerTokenOf(authorization);
  if (!token.ok) return token;
  const verified = await verifyToken(token.token, secret, new Date());
  return verified.ok ? { ok: true, principal: verified.principal } : verified;
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

/** A verified token's principal and the instant it expires. Internal. */
export type TokenVerification =
  | { readonly ok: true; readonly principal: Principal; readonly expiresAtMs: number | undefined }
  | { readonly ok: false; readonly refusal: 'invalid' | 'expired' };

/**
 * Verifies a compact JWT as of `now`: HS256 signature with `secret`'s key,
 * `exp` and `nbf` against `now`, a `sub` of 1 to 256 characters and a known
 * `role`. Internal: the one verification both {@link verifyBearer} and the
 * caching verifier run.
 */
export async function verifyToken(token: string, secret: string, now: Date): Promise<TokenVerification> {
  try {
    const { payload } = await jwtVerify(token, await hmacKey(secret), { algorithms: [ALGORITHM], currentDate: now });
    const subject = payload.sub;
    const role = payload['role'];
    if (typeof subject !== 'string' || subject.length === 0 || subject.length > 256 || !isRole(role)) {
      return { ok: false, refusal: 'invalid' };
    }
    return { ok: true, principal: { subject, role }, expiresAtMs: payload.exp === undefined ? undefined : payload.exp * 1000 };
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) return { ok: false, refusal: 'expired' };
    return { ok: false, refusal: 'invalid' };
  }
}

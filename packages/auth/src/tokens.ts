import { SignJWT, errors as joseErrors, jwtVerify } from 'jose';
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
  return jwt.sign(secretKey(options.secret));
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
 */
export async function verifyBearer(
  authorization: string | null | undefined,
  secret: string,
): Promise<BearerVerdict> {
  if (!authorization) return { ok: false, refusal: 'missing' };
  const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(authorization);
  if (!match?.[1]) return { ok: false, refusal: 'malformed' };
  try {
    const { payload } = await jwtVerify(match[1], secretKey(secret), { algorithms: [ALGORITHM] });
    const subject = payload.sub;
    const role = payload['role'];
    if (typeof subject !== 'string' || subject.length === 0 || subject.length > 256 || !isRole(role)) {
      return { ok: false, refusal: 'invalid' };
    }
    return { ok: true, principal: { subject, role } };
  } catch (error) {
    if (error instanceof joseErrors.JWTExpired) return { ok: false, refusal: 'expired' };
    return { ok: false, refusal: 'invalid' };
  }
}

function secretKey(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

import { createLocalJWKSet, type JWK, type JWTVerifyGetKey } from 'jose';

/** The asymmetric algorithms a {@link PublicKeySet} verifies; never HS256, never `none`. */
export const PUBLIC_KEY_ALGORITHMS = ['EdDSA', 'RS256'] as const;

/** One of {@link PUBLIC_KEY_ALGORITHMS}. */
export type PublicKeyAlgorithm = (typeof PUBLIC_KEY_ALGORITHMS)[number];

/** Members of a JWK that only a private (or symmetric) key has. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv'] as const;

/**
 * The public keys of an external token issuer, from a JSON Web Key Set,
 * against which EdDSA (Ed25519) and RS256 bearer tokens are verified.
 * Made only by {@link publicKeySetFromJwks}, which has already refused a
 * set that holds private key material or no usable key.
 */
export interface PublicKeySet {
  /** How many keys of the set can verify tokens (each Ed25519 or RSA, with a `kid`). */
  readonly size: number;
  /** Finds the key a token names by `kid` (jose's local JWKS). Internal to `verifyToken`. */
  readonly keyFor: JWTVerifyGetKey;
}

/** Why a JSON Web Key Set cannot be used; its message never quotes the set. */
export class UnusableKeySetError extends Error {
  override readonly name = 'UnusableKeySetError';
}

/**
 * A {@link PublicKeySet} from a parsed JWKS document (`{"keys": [...]}`).
 * A key is usable when it is an Ed25519 (`kty: OKP`, `crv: Ed25519`) or
 * RSA (`kty: RSA`) public key with a `kid`, no `use` other than `sig` and
 * no `alg` other than `EdDSA` / `RS256` respectively; keys of other types
 * (for example EC) are left out and never verify anything. Throws
 * {@link UnusableKeySetError}, saying which key (by position) and why but
 * never showing its members, when the document is not a key set, when any
 * key carries private or symmetric material (`d`, `p`, `k`, ...: a
 * verifier needs none, and a symmetric key would let whoever reads the file
 * mint tokens), when two usable keys share a `kid`, or when no key is
 * usable.
 */
export function publicKeySetFromJwks(document: unknown): PublicKeySet {
  const keys = isRecord(document) ? document['keys'] : undefined;
  if (!Array.isArray(keys)) throw new UnusableKeySetError('is not a JSON Web Key Set: expected {"keys": [...]}');
  const usable: JWK[] = [];
  const kids = new Set<string>();
  keys.forEach((key: unknown, index) => {
    const position = `key ${index + 1}`;
    if (!isRecord(key) || typeof key['kty'] !== 'string') throw new UnusableKeySetError(`${position} is not a JSON Web Key`);
    if (PRIVATE_MEMBERS.some((member) => member in key)) {
      throw new UnusableKeySetError(`${position} holds private or symmetric key material; the set must hold public keys only`);
    }
    const algorithm = algorithmOf(key);
    if (algorithm === undefined) return;
    const kid = key['kid'];
    if (typeof kid !== 'string' || kid === '') throw new UnusableKeySetError(`${position} has no kid; tokens select their key by kid`);
    if (kids.has(kid)) throw new UnusableKeySetError(`${position} repeats the kid of an earlier key`);
    kids.add(kid);
    usable.push({ ...(key as JWK), alg: algorithm });
  });
  if (usable.length === 0) throw new UnusableKeySetError('holds no public Ed25519 (EdDSA) or RSA (RS256) key');
  return Object.freeze({ size: usable.length, keyFor: createLocalJWKSet({ keys: usable }) });
}

/** The algorithm a public JWK verifies, or undefined when it is not one Docket accepts. */
function algorithmOf(key: Readonly<Record<string, unknown>>): PublicKeyAlgorithm | undefined {
  const declared = key['alg'];
  if (key['use'] !== undefined && key['use'] !== 'sig') return undefined;
  const algorithm: PublicKeyAlgorithm | undefined =
    key['kty'] === 'OKP' && key['crv'] === 'Ed25519' ? 'EdDSA' : key['kty'] === 'RSA' ? 'RS256' : undefined;
  if (algorithm === undefined || (declared !== undefined && declared !== algorithm)) return undefined;
  return algorithm;
}

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

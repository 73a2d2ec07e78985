import { exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose';

/** A signing key of an external token issuer: its key pair, and the public half as the issuer's key set lists it. */
export interface IssuerKey {
  readonly alg: 'EdDSA' | 'RS256';
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  /** The public key as a JWK carrying `kid`, as it stands in the issuer's JSON Web Key Set. */
  readonly publicJwk: JWK;
}

/** A fresh, extractable key pair for `alg` (Ed25519 for EdDSA) named `kid`. */
export async function newIssuerKey(alg: IssuerKey['alg'], kid: string): Promise<IssuerKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'EdDSA' ? { crv: 'Ed25519' } : {}) });
  return { alg, kid, privateKey, publicKey, publicJwk: { ...(await exportJWK(publicKey)), kid } };
}

export { ROLES, isRole, type Principal, type Role } from './roles.js';
export {
  DEFAULT_CLOCK_TOLERANCE_SECONDS,
  MAX_GRANTED_QUEUES,
  mintToken,
  verifyBearer,
  type BearerVerdict,
  type MintTokenOptions,
  type TokenKeys,
  type TokenRefusal,
  type TokenRules,
} from './tokens.js';
export {
  DEFAULT_VERIFIED_TOKEN_CAPACITY,
  DEFAULT_VERIFIED_TOKEN_MAX_AGE_MS,
  createBearerVerifier,
  type BearerVerifier,
  type BearerVerifierOptions,
} from './bearer-verifier.js';
export {
  PUBLIC_KEY_ALGORITHMS,
  UnusableKeySetError,
  publicKeySetFromJwks,
  type PublicKeyAlgorithm,
  type PublicKeySet,
} from './public-key-set.js';
export { SERVICE_AUDIENCE, SERVICE_TOKEN_TTL_SECONDS, serviceTokenSource, type ServiceTokenOptions } from './service-tokens.js';
export { MIN_SECRET_LENGTH, weakSecretReason } from './secret-strength.js';

export { ROLES, isRole, type Principal, type Role } from './roles.js';
export {
  mintToken,
  verifyBearer,
  type BearerVerdict,
  type MintTokenOptions,
  type TokenRefusal,
} from './tokens.js';
export {
  DEFAULT_VERIFIED_TOKEN_CAPACITY,
  DEFAULT_VERIFIED_TOKEN_MAX_AGE_MS,
  createBearerVerifier,
  type BearerVerifier,
  type BearerVerifierOptions,
} from './bearer-verifier.js';

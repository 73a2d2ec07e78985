export { ROLES, isRole, type Principal, type Role } from './roles.js';
export {
  mintToken,
  verifyBearer,
  type BearerVerdict,
  type MintTokenOptions,
  type TokenRefusal,
} from './tokens.js';

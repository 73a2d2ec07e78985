import { Code, type ConnectError } from '@connectrpc/connect';
import { docketConnectError } from './error-mapping.js';

/** The bare `UNAUTHENTICATED` refusal: no hint of why, or of what exists. */
export function unauthenticatedError(): ConnectError {
  return docketConnectError({
    code: Code.Unauthenticated,
    reason: 'UNAUTHENTICATED',
    message: 'unauthenticated',
  });
}

/** The bare `PERMISSION_DENIED` refusal: no hint of what exists. */
export function permissionDeniedError(): ConnectError {
  return docketConnectError({
    code: Code.PermissionDenied,
    reason: 'PERMISSION_DENIED',
    message: 'permission denied',
  });
}

import type { Interceptor } from '@connectrpc/connect';

/**
 * A bearer token, or a function returning the current one (called before
 * every request, so a long-running caller can rotate short-lived tokens).
 */
export type TokenSource = string | (() => string | Promise<string>);

/** The `authorization` header value for `token`: `Bearer <token>`. */
export async function bearerValue(token: TokenSource): Promise<string> {
  return `Bearer ${typeof token === 'string' ? token : await token()}`;
}

/**
 * An interceptor that sends `authorization: Bearer <token>` on every call,
 * for any Connect transport (connect-node's, or connect-web's
 * `createGrpcWebTransport` in a browser). The token is never put anywhere
 * else.
 */
export function bearerAuth(token: TokenSource): Interceptor {
  return (next) => async (request) => {
    request.header.set('authorization', await bearerValue(token));
    return next(request);
  };
}

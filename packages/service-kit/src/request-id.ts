import { randomUUID } from 'node:crypto';
import { createContextKey, type HandlerContext } from '@connectrpc/connect';

/** The header that carries a request id across hops and into every log line. */
export const REQUEST_ID_HEADER = 'x-request-id';

const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:/=+-]{1,128}$/;

/** Context key holding the request id of the current RPC. */
export const requestIdKey = createContextKey<string>('', { description: 'docket request id' });


/**
 * The caller's `x-request-id` when it is a short token of safe characters,
 * otherwise a fresh UUID, so a log line never carries an attacker-shaped value.
 */
export function requestIdFrom(header: Headers): string {
  const given = header.get(REQUEST_ID_HEADER);
  return given !== null && ACCEPTABLE_REQUEST_ID.test(given) ? given : randomUUID();
}

/** The request id of the current RPC, as logged in its `rpc` line. */
export function requestIdOf(ctx: HandlerContext): string {
  return ctx.values.get(requestIdKey);
}

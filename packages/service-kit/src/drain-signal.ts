import { createContextKey, type HandlerContext } from '@connectrpc/connect';

/** Context key holding the server's drain signal; the default never aborts. */
export const drainSignalKey = createContextKey<AbortSignal>(new AbortController().signal, {
  description: 'docket drain signal',
});

/**
 * A signal that aborts when the server begins a graceful shutdown. Long-lived
 * streams (live tails, change feeds) should watch it, send their final frame
 * and return, so they end cleanly within the grace period instead of being
 * cut off when it expires. Unlike `ctx.signal`, it does not fire when the
 * call itself ends. Each call has a signal of its own (see `SignalRelay`),
 * so listening on it costs the same however many calls are open.
 */
export function drainSignalOf(ctx: HandlerContext): AbortSignal {
  return ctx.values.get(drainSignalKey);
}

import { createContextKey, type HandlerContext } from '@connectrpc/connect';
import { SignalRelay } from './signal-relay.js';

/** Context key holding the server's drain relay; the default never aborts. */
export const drainRelayKey = createContextKey<SignalRelay>(new SignalRelay(), {
  description: 'docket drain relay',
});

/** Where a call keeps the drain signal `drainSignalOf` made for it. */
const callDrainKey = createContextKey<AbortSignal | undefined>(undefined, { description: 'docket call drain signal' });

/** The server's drain to listen to directly: see {@link drainOf}. */
export type Drain = Pick<SignalRelay, 'aborted' | 'listen'>;

/**
 * The server's drain itself, for a long-lived stream that stops listening
 * when it ends: `listen` costs a Set entry and no AbortSignal (about a
 * kilobyte of heap each, which ten thousand open streams notice).
 */
export function drainOf(ctx: HandlerContext): Drain {
  return ctx.values.get(drainRelayKey);
}

/**
 * A signal that aborts when the server begins a graceful shutdown. Long-lived
 * streams (live tails, change feeds) should watch it, send their final frame
 * and return, so they end cleanly within the grace period instead of being
 * cut off when it expires. Unlike `ctx.signal`, it does not fire when the
 * call itself ends.
 *
 * Each call that asks gets a signal of its own, made on its first ask and
 * following the server's `SignalRelay` until the call ends (`ctx.signal`),
 * so listening on it costs the same however many calls are open, and a
 * call that never asks costs nothing.
 */
export function drainSignalOf(ctx: HandlerContext): AbortSignal {
  let signal = ctx.values.get(callDrainKey);
  if (!signal) ctx.values.set(callDrainKey, (signal = ctx.values.get(drainRelayKey).follow(ctx.signal)));
  return signal;
}

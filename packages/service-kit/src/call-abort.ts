import { createContextKey, type ContextValues } from '@connectrpc/connect';

/**
 * How a call served from its raw HTTP/2 stream (`serveUnaryStream`) or by
 * a caller in this process tells whether it was aborted, and who wants to
 * know when it is, without making its AbortSignal: the signal (an
 * AbortController, its EventTarget and the abort event dispatched at every
 * call's end) is made only when something asks for it, and most unary
 * calls never do.
 */
export interface CallAbortState {
  /** Whether the client left, the deadline passed, the server stopped the call or it ended. */
  readonly aborted: () => boolean;
  /**
   * Calls `listener` with the reason when the call is aborted for any of
   * those (at once if it is); returns the function that stops listening.
   */
  readonly listen: (listener: (reason: unknown) => void) => () => void;
}

/** Where such a call keeps its {@link CallAbortState}. */
export const callAbortKey = createContextKey<CallAbortState | undefined>(undefined, { description: 'docket call abort state' });

/**
 * Whether a call is aborted, asked without making its signal where the
 * call can tell (see {@link CallAbortState}), otherwise from `signal`.
 */
export function isCallAborted(req: { readonly contextValues: ContextValues; readonly signal: AbortSignal }): boolean {
  const state = req.contextValues.get(callAbortKey);
  return state ? state.aborted() : req.signal.aborted;
}

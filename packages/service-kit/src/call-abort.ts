import { createContextKey, type ContextValues } from '@connectrpc/connect';

/**
 * How a call served from its raw HTTP/2 stream (`serveUnaryStream`) tells
 * whether it was aborted without making its AbortSignal: the signal is
 * made only when something asks for it, and most unary calls never do.
 */
export interface CallAbortState {
  /** Whether the client left, the deadline passed or the server stopped the call. */
  readonly aborted: () => boolean;
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

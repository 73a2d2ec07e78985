import { Code, ConnectError, createContextKey, type ContextValues } from '@connectrpc/connect';
import type { SignalRelay } from './signal-relay.js';

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

/** The reason a call that was answered is aborted with: whatever still waits on it stops. */
export const CALL_ENDED = new ConnectError('the call ended', Code.Canceled);

/**
 * One call's abort, as a served unary call and each call of a worker
 * session hold it: the reason once it is aborted (its deadline passed, its
 * caller left or cancelled it, the server stopped it, it ended), listeners
 * kept as entries of a Set ({@link listen}), and an AbortSignal made only
 * when something asks for one ({@link signal}). The deadline's timer and
 * the server's hard stop are armed only for the first who listens or asks
 * for the signal; a call nobody waits on costs no timer and no event.
 */
export class CallAbort {
  /** When the deadline passes (ms since the epoch), if the caller set one. */
  deadlineAt: number | undefined;
  readonly #shutdown: SignalRelay | undefined;
  #reason: unknown;
  #controller: AbortController | undefined;
  #listeners: Set<(reason: unknown) => void> | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  #stopListening: (() => void) | undefined;

  /** @param shutdown the server's hard stop, which aborts the call too */
  constructor(shutdown?: SignalRelay) {
    this.#shutdown = shutdown;
  }

  /** The reason it was aborted with; undefined while it is not. */
  get reason(): unknown {
    return this.#reason;
  }

  /** Whether the call was aborted, its deadline's passing noticed here too. */
  isAborted(): boolean {
    if (this.#reason !== undefined) return true;
    if (this.deadlineAt !== undefined && Date.now() >= this.deadlineAt) {
      this.abort(deadlinePassed());
      return true;
    }
    return false;
  }

  /** Aborts the call with `reason` (the first reason stands): its signal, if made, and every listener. */
  abort(reason: unknown): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    clearTimeout(this.#deadlineTimer);
    this.#stopListening?.();
    this.#controller?.abort(reason);
    const listeners = this.#listeners;
    this.#listeners = undefined;
    listeners?.forEach((listener) => listener(reason));
  }

  /** The call's AbortSignal, made on first ask. */
  signal(): AbortSignal {
    if (this.#controller) return this.#controller.signal;
    const controller = (this.#controller = new AbortController());
    if (this.isAborted()) controller.abort(this.#reason);
    else this.#watch();
    return controller.signal;
  }

  /**
   * Calls `listener` when the call aborts, as its signal would, without
   * making the signal: a Set entry instead of an AbortController and its
   * event. Returns the function that stops listening.
   */
  listen(listener: (reason: unknown) => void): () => void {
    if (this.isAborted()) {
      listener(this.#reason);
      return () => {};
    }
    this.#watch();
    const listeners = (this.#listeners ??= new Set());
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }

  /** What {@link callAbortKey} holds for the call. */
  state(): CallAbortState {
    return { aborted: () => this.isAborted(), listen: (listener) => this.listen(listener) };
  }

  /** Arms what aborts the call on its own (its deadline, the server's hard stop), once, for the first who asks. */
  #watch(): void {
    if (this.#stopListening) return;
    if (this.deadlineAt !== undefined) {
      this.#deadlineTimer = setTimeout(() => this.abort(deadlinePassed()), Math.max(0, this.deadlineAt - Date.now()));
    }
    this.#stopListening = this.#shutdown?.listen((reason) => this.abort(reason)) ?? (() => {});
  }
}

function deadlinePassed(): ConnectError {
  return new ConnectError('the operation timed out', Code.DeadlineExceeded);
}

import { Code, ConnectError } from '@connectrpc/connect';
import type { JobSignalHub } from './job-signal-hub.js';
import { STATE_RETRY_BUDGET_MS } from './state-retry.js';

/**
 * Waits until the process's upstream is live, for at most what is left of
 * the retry budget since it was lost; then fails UNAVAILABLE, so the client
 * resumes from its own cursor (perhaps on another events replica). Returns
 * early when `signal` aborts.
 */
export async function untilLive(hub: JobSignalHub, signal: AbortSignal): Promise<void> {
  if (hub.live) return;
  const remainingMs = Math.max(0, Math.ceil(STATE_RETRY_BUDGET_MS - hub.lostForMs()));
  await hub.whenLive(AbortSignal.any([signal, AbortSignal.timeout(remainingMs)]));
  if (!hub.live && !signal.aborted) throw lostTooLong();
}

/** Fails UNAVAILABLE when the upstream has been lost for longer than the retry budget. */
export function assertNotLostTooLong(hub: JobSignalHub): void {
  if (!hub.live && hub.lostForMs() > STATE_RETRY_BUDGET_MS) throw lostTooLong();
}

function lostTooLong(): ConnectError {
  return new ConnectError('the state service has been unreachable for too long', Code.Unavailable);
}

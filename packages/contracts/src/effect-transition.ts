/**
 * Why an effect was interrupted before its commit (`EffectRecoveryReason`
 * without the prefix). `CANCELLED_BEFORE_COMMIT` is recorded only by a
 * cancellation; the others are what a worker may record.
 */
export type EffectRecoveryReasonName =
  | 'CANCELLED_BEFORE_COMMIT'
  | 'DEPENDENCY_UNAVAILABLE'
  | 'OUTCOME_UNKNOWN'
  | 'DEADLINE_EXCEEDED'
  | 'INTERRUPTED';

/** The reasons a worker may record itself (every one but `CANCELLED_BEFORE_COMMIT`). */
export type WorkerRecoveryReason = Exclude<EffectRecoveryReasonName, 'CANCELLED_BEFORE_COMMIT'>;

/**
 * One AdvanceEffect transition, as the worker SDK sends it and the state
 * service checks it (the `transition` oneof of AdvanceEffectRequest).
 */
export type EffectTransition =
  | { readonly kind: 'signed'; readonly externalId: string }
  | { readonly kind: 'committed'; readonly externalId: string }
  | { readonly kind: 'recoverable'; readonly reason: WorkerRecoveryReason; readonly retryNotBefore: Date | undefined }
  | { readonly kind: 'resume' }
  | { readonly kind: 'cancelled' };

import { AsyncLocalStorage } from 'node:async_hooks';
import {
  RequestBatcher as ContextFreeBatcher,
  type BatchBudget,
  type ItemOutcome,
  type RequestBatcherOptions,
} from '@docket/client-kit';

export type { BatchBudget, ItemOutcome, RequestBatcherOptions, SubmitOptions } from '@docket/client-kit';

/**
 * The client kit's {@link ContextFreeBatcher} as a service batches with it:
 * each batch is decided in the async context of its first item's caller
 * (`AsyncLocalStorage.snapshot`), so the batch's RPC and queries are traced
 * and logged as part of that call, whichever batch finished before it.
 */
export class RequestBatcher<Item, Result> extends ContextFreeBatcher<Item, Result> {
  constructor(
    decide: (items: readonly Item[], budget: BatchBudget) => Promise<readonly ItemOutcome<Result>[]>,
    options: Omit<RequestBatcherOptions<Item>, 'captureContext'>,
  ) {
    super(decide, { ...options, captureContext: () => AsyncLocalStorage.snapshot() });
  }
}

import type { DocketClient } from '@docket/client';
import type { ConsoleConfig } from '../console-config.js';

/** What every page is given when it is shown. */
export interface PageContext {
  /** A `@docket/client` authenticated with the signed-in token. */
  readonly client: DocketClient;
  readonly config: ConsoleConfig;
  /** Where the page draws itself. */
  readonly main: HTMLElement;
  /** Aborted when the person leaves the page: its streams and calls stop. */
  readonly signal: AbortSignal;
}

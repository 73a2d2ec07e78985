/**
 * `@docket/client`: call Docket's public API from TypeScript. Submissions
 * and every other mutation are idempotent by key and retried only when
 * they may have succeeded, always with the same key; listings page
 * themselves; `watch` streams a job's journal, verifying its hash chain
 * and resuming after disconnects with no gap and no duplicate; `watchJobs`
 * follows the change feed by cursor; every failure is a typed
 * `DocketClientError`. Node transports are built from a URL and a token;
 * other platforms pass their own Connect transports. Deep imports are not
 * part of the API.
 */
export * from './portable.js';
export { createClient } from './create-client.js';
export { createNodeTransports, type NodeTransports } from './node-transports.js';

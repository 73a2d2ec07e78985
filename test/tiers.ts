/**
 * The suite's tiers, by what a test starts (docs/contributing.md, "Test
 * tiers"). vitest.config.ts makes each a project; `npm test` runs all four,
 * `npm run test:quick` the first two.
 *
 * - unit: beside the code (`packages/*\/src`, `services/*\/src`), no database, no process.
 * - routes: beside the code, against the run's real PostgreSQL (a database of its own).
 * - system: `test/`, the four services in the test's process (`startInProcessCluster`)
 *   on real loopback ports and real PostgreSQL; clients may be processes (CLI, Python, raw workers).
 * - processes: service processes (`startCluster`, `startService`, `docket dev`, the
 *   README's commands): crashes, kill -9, signals, restarts, replicas, memory of a process.
 *
 * A new file beside the code is unit and a new file in `test/` is system
 * unless it is listed here. The unit and system tiers share modules between
 * the files a worker runs (vitest `isolate: false`): every file must leave
 * no fake timer, stub or open resource behind; a file that mocks a module
 * is listed in {@link MODULE_MOCK_TESTS} and gets a module graph of its own.
 */

/**
 * Unit tests that replace a module (`vi.mock`): they need a module graph of
 * their own, while the rest of the unit tier shares one per worker.
 */
export const MODULE_MOCK_TESTS = ['packages/auth/src/bearer-verifier.test.ts'];

/** Tests beside the code that start the four services in process (`startInProcessCluster`). */
export const SYSTEM_TESTS_BESIDE_THE_CODE = ['packages/worker-sdk/src/claim-flow.test.ts'];

/** Tests beside the code that use the run's PostgreSQL. */
export const ROUTES_TESTS = [
  'services/state/src/db/sqlstate.test.ts',
  'services/state/src/db/database-errors.test.ts',
  'services/state/src/db/write-transaction.test.ts',
  'services/state/src/db/pool.test.ts',
  'services/state/src/db/queue-stats-triggers.test.ts',
  'services/state/src/feed/read-job-changes.test.ts',
];

/** Tests anywhere that start service processes (or Postgres servers of their own). */
export const PROCESS_TESTS = [
  'packages/cli/src/launch-service.test.ts',
  'packages/cli/src/nginx-front.test.ts',
  'packages/cli/src/owner-flow.test.ts',
  'packages/cli/src/run-dev.test.ts',
  'packages/client/src/client.test.ts',
  'packages/embedded-postgres/src/start-embedded-postgres.test.ts',
  'packages/embedded-postgres/src/stale-postmaster-pid.test.ts',
  'test/faults/**/*.test.ts',
  'test/support/cluster.test.ts',
  'test/support/service-process.test.ts',
  'test/admission-batch-failure.test.ts',
  'test/admission-idempotency.test.ts',
  'test/dependency-health.test.ts',
  'test/event-streams-at-scale.test.ts',
  'test/execution-claims.test.ts',
  'test/execution-control.test.ts',
  'test/hard-deletion-crash.test.ts',
  'test/no-leaks.test.ts',
  'test/one-process.test.ts',
  'test/pgbouncer.test.ts',
  'test/readme-commands.test.ts',
  'test/replicas-behind-nginx.test.ts',
  'test/schema-refusal.test.ts',
  'test/schema-snapshot.test.ts',
  'test/security/bounded-inputs.test.ts',
  'test/security/fuzz-public-rpcs.test.ts',
  'test/security/jwks-tokens.test.ts',
  'test/state-crash-admission.test.ts',
  'test/state-migrate.test.ts',
  'test/state-without-embedded-postgres.test.ts',
  'test/stream-job-events.test.ts',
  'test/traces.test.ts',
];

/** Where the tests beside the code live. */
export const BESIDE_THE_CODE = ['packages/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts'];

/**
 * The files that took longest in a full run on a 2-core machine, longest
 * first (docs/contributing.md lists their times): the sequencer starts them
 * first so that none runs alone at the end of its tier.
 */
export const SLOWEST_FILES = [
  'test/readme-commands.test.ts',
  'test/event-streams-at-scale.test.ts',
  'test/execution-zombie.test.ts',
  'test/faults/network-partitions.test.ts',
  'test/queue-policy.test.ts',
  'test/faults/schedule-replicas.test.ts',
  'test/console.test.ts',
  'test/execution-claims.test.ts',
  'test/faults/kill-during-admissions.test.ts',
  'test/faults/postgres-outages.test.ts',
];

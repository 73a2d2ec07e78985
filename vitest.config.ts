import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import SlowestFirst from './test/slowest-first.js';
import { BESIDE_THE_CODE, MODULE_MOCK_TESTS, PROCESS_TESTS, ROUTES_TESTS, SYSTEM_TESTS_BESIDE_THE_CODE } from './test/tiers.js';

const root = fileURLToPath(new URL('.', import.meta.url));

/** Workspace packages resolve to their sources, so unit tests need no build. */
const packageSources: Record<string, string> = {
  '@docket/contracts': 'packages/contracts/src/index.ts',
  '@docket/auth': 'packages/auth/src/index.ts',
  '@docket/trace-context': 'packages/trace-context/src/index.ts',
  '@docket/client-kit': 'packages/client-kit/src/index.ts',
  '@docket/client-kit/node': 'packages/client-kit/src/node.ts',
  '@docket/service-kit': 'packages/service-kit/src/index.ts',
  '@docket/embedded-postgres': 'packages/embedded-postgres/src/index.ts',
  '@docket/cli': 'packages/cli/src/index.ts',
  '@docket/worker-sdk': 'packages/worker-sdk/src/index.ts',
  '@docket/client': 'packages/client/src/index.ts',
};


/**
 * One tier of the suite (test/tiers.ts) as a vitest project. With `isolate:
 * false` the files a worker runs share their modules (the services',
 * protobuf's, ...), loaded once per worker instead of once per file; with
 * `true` the worker drops them between files. vitest runs the tiers one
 * after another, the files of each in parallel.
 */
function tier(name: string, include: readonly string[], exclude: readonly string[], isolate: boolean) {
  return {
    extends: true as const,
    test: { name, include: [...include], exclude: [...configDefaults.exclude, ...exclude], poolOptions: { forks: { isolate } } },
  };
}

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@docket\/proto\/(.*)\.js$/, replacement: `${root}packages/proto/src/gen/$1.ts` },
      { find: /^@docket\/proto\/(.*)$/, replacement: `${root}packages/proto/src/gen/$1.ts` },
      { find: /^@docket\/(state|admission|execution|events)-service\/start$/, replacement: `${root}services/$1/src/$1-service.ts` },
      ...Object.entries(packageSources).map(([name, path]) => ({
        find: new RegExp(`^${name.replace('/', '\\/')}$`),
        replacement: `${root}${path}`,
      })),
    ],
  },
  test: {
    globalSetup: ['test/support/global-setup.ts'],
    sequence: { sequencer: SlowestFirst },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Test files wait on sockets, Postgres and child processes more than
    // they compute: three at a time keep both cores of a 2-core machine
    // busy, in every tier (`npm test` runs the processes tier on its own,
    // after the others; three of its files at once took 204 s against
    // 263-270 s two at a time, with both cores at about 87 %).
    maxWorkers: 3,
    minWorkers: 3,
    // `isolate: false` here lets the pool reuse its workers; each tier
    // says whether a worker drops its modules between files (see tier()).
    // minWorkers = maxWorkers: a worker retired for idleness while the pool
    // recycles its workers between tiers rejects with "Terminating worker
    // thread" (vitest-dev/vitest#8564), which fails the run.
    isolate: false,
    poolOptions: { forks: { isolate: false } },
    projects: [
      tier('unit', BESIDE_THE_CODE, [...MODULE_MOCK_TESTS, ...ROUTES_TESTS, ...SYSTEM_TESTS_BESIDE_THE_CODE, ...PROCESS_TESTS], false),
      tier('unit-module-mocks', MODULE_MOCK_TESTS, [], true),
      tier('routes', ROUTES_TESTS, [], true),
      tier('system', ['test/**/*.test.ts', ...SYSTEM_TESTS_BESIDE_THE_CODE], PROCESS_TESTS, false),
      tier('processes', PROCESS_TESTS, [], true),
    ],
  },
});

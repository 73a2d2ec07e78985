import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = fileURLToPath(new URL('.', import.meta.url));

/** Workspace packages resolve to their sources, so unit tests need no build. */
const packageSources: Record<string, string> = {
  '@docket/contracts': 'packages/contracts/src/index.ts',
  '@docket/auth': 'packages/auth/src/index.ts',
  '@docket/trace-context': 'packages/trace-context/src/index.ts',
  '@docket/service-kit': 'packages/service-kit/src/index.ts',
  '@docket/embedded-postgres': 'packages/embedded-postgres/src/index.ts',
  '@docket/cli': 'packages/cli/src/index.ts',
  '@docket/worker-sdk': 'packages/worker-sdk/src/index.ts',
  '@docket/client': 'packages/client/src/index.ts',
};

export default defineConfig({
  resolve: {
    alias: [
      { find: /^@docket\/proto\/(.*)\.js$/, replacement: `${root}packages/proto/src/gen/$1.ts` },
      { find: /^@docket\/proto\/(.*)$/, replacement: `${root}packages/proto/src/gen/$1.ts` },
      ...Object.entries(packageSources).map(([name, path]) => ({
        find: new RegExp(`^${name.replace('/', '\\/')}$`),
        replacement: `${root}${path}`,
      })),
    ],
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'services/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});

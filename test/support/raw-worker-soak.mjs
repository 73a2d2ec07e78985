// The zombie-worker soak: the test in test/execution-zombie.test.ts with
// many more rounds (default 2000; pass a number to choose), on a fresh
// cluster and database, through vitest exactly as `npm test` runs it.
//
//   npm run build && node test/support/raw-worker-soak.mjs 5000
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const iterations = Number(process.argv[2] ?? 2000);
if (!Number.isInteger(iterations) || iterations < 1) {
  process.stderr.write('usage: node test/support/raw-worker-soak.mjs [iterations]\n');
  process.exit(2);
}
const root = fileURLToPath(new URL('../..', import.meta.url));
const vitest = spawn(
  process.execPath,
  [`${root}node_modules/vitest/vitest.mjs`, 'run', 'test/execution-zombie.test.ts'],
  { cwd: root, stdio: 'inherit', env: { ...process.env, DOCKET_ZOMBIE_ITERATIONS: String(iterations) } },
);
vitest.once('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

// Command-line options of `npm run bench -- [options]`.
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_EXTRAS, DEFAULT_SCENARIOS, EXTRA_SCENARIOS } from './plan.mjs';

export const USAGE = `npm run bench -- [options]

  --quick                 1 repetition, 1,000 jobs per measurement, a 20,000-job "large" backlog (under 3 minutes)
  --reps N                repetitions (default 3; 1 with --quick)
  --jobs N                jobs per measurement (default 4,000; 1,000 with --quick)
  --only a,b              scenarios to run: ${[...DEFAULT_SCENARIOS, ...EXTRA_SCENARIOS].join(', ')}
                          (default: ${[...DEFAULT_SCENARIOS, ...DEFAULT_EXTRAS].join(', ')})
  --docket-root PATH      run the Docket services from PATH/services/<name>/dist/main.js (default: this checkout)
  --baseline-root PATH    also run a "Docket (baseline)" column from another checkout (e.g. a git worktree)
  --one-process           also run a "Docket (one process)" column: the same checkout's four services in one process (services/one-process)
  --statements            after the run, print the top 25 statements by total time in each Docket database
  --out DIR               where to write last-run.*, latest.* and history.csv (default: bench/results)
  --help`;

/** Parses `argv` (without node and script). */
export function parseOptions(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      reps: { type: 'string' },
      jobs: { type: 'string' },
      only: { type: 'string' },
      'docket-root': { type: 'string' },
      'baseline-root': { type: 'string' },
      'one-process': { type: 'boolean' },
      statements: { type: 'boolean', default: false },
      out: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  const known = [...DEFAULT_SCENARIOS, ...EXTRA_SCENARIOS];
  const only = values.only?.split(',').map((name) => name.trim()).filter(Boolean);
  const unknown = only?.filter((name) => !known.includes(name)) ?? [];
  if (unknown.length > 0) throw new Error(`unknown scenario(s) ${unknown.join(', ')}; known: ${known.join(', ')}`);
  const count = (name, text) => {
    if (text === undefined) return undefined;
    const number = Number(text);
    if (!Number.isInteger(number) || number < 1) throw new Error(`--${name} takes a positive whole number`);
    return number;
  };
  const repoRoot = new URL('..', import.meta.url).pathname;
  return {
    help: values.help,
    quick: values.quick,
    reps: count('reps', values.reps) ?? (values.quick ? 1 : 3),
    jobs: count('jobs', values.jobs),
    scenarios: only ?? [...DEFAULT_SCENARIOS, ...DEFAULT_EXTRAS],
    docketRoot: resolve(values['docket-root'] ?? repoRoot),
    baselineRoot: values['baseline-root'] ? resolve(values['baseline-root']) : undefined,
    oneProcess: values['one-process'] ?? false,
    statements: values.statements,
    outDir: resolve(values.out ?? new URL('./results', import.meta.url).pathname),
  };
}

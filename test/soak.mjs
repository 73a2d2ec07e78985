#!/usr/bin/env node
// `npm run test:soak -- N`: runs the whole suite (`npm test`, exactly what
// CI runs after `npm ci`) N times in a row (default 5) and prints each run's
// wall time, its test counts and the tests that failed. Each run's full
// output is kept in test-output/soak/run-<i>.log. Exits 1 if any run failed.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

const runs = Number(process.argv[2] ?? 5);
if (!Number.isInteger(runs) || runs < 1) {
  console.error(`usage: npm run test:soak -- <runs>  (a positive integer, got ${JSON.stringify(process.argv[2])})`);
  process.exit(2);
}
const root = new URL('..', import.meta.url).pathname;
const logs = join(root, 'test-output', 'soak');
await mkdir(logs, { recursive: true });

/** Runs `npm test` once, its output into `logPath`; resolves with its exit code and wall time. */
function runSuite(logPath) {
  return new Promise((resolve, reject) => {
    const log = createWriteStream(logPath);
    const started = performance.now();
    const child = spawn('npm', ['test'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, FORCE_COLOR: '0' } });
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    child.on('error', reject);
    child.on('close', (code) => log.end(() => resolve({ code, seconds: (performance.now() - started) / 1000 })));
  });
}

let failedRuns = 0;
for (let run = 1; run <= runs; run += 1) {
  const logPath = join(logs, `run-${run}.log`);
  const { code, seconds } = await runSuite(logPath);
  // Colours off or not (vitest colours its summary when CI is set), the summary is read without them.
  const output = (await readFile(logPath, 'utf8')).replace(/\x1b\[[0-9;]*m/g, '');
  const counts = [...output.matchAll(/^\s*(Test Files|Tests)\s+(.*)$/gm)].map((match) => `${match[1]}: ${match[2].trim()}`);
  const failures = [...new Set([...output.matchAll(/^\s*FAIL\s+(.*)$/gm)].map((match) => match[1].trim()))];
  if (code !== 0) failedRuns += 1;
  console.log(`run ${run}/${runs}: ${code === 0 ? 'green' : `FAILED (exit ${code})`} in ${seconds.toFixed(0)} s; ${counts.join('; ') || 'no summary'} (${logPath})`);
  for (const failure of failures) console.log(`  FAIL ${failure}`);
}
console.log(`${runs - failedRuns} of ${runs} runs green`);
process.exit(failedRuns === 0 ? 0 : 1);
